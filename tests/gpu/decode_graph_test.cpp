// Decoding steps replayed from CUDA graphs (DecodeSteps::kGraphed) against
// the plain path on the same GPU: GPT-2 124M's shapes, 256 tokens. Each
// test skips, saying so, without a GPU (gpu/need_cuda.h).
//
// How equality is judged: the graphed decoder is fed the plain path's
// tokens (teacher forcing), so every step compares logits of the same
// context. Greedy text may then part only at a step whose two best plain
// logits are closer than twice the two paths' largest difference there:
// the order of two near-equal values is all that float rounding can flip.

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <thread>
#include <string>
#include <tuple>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/generate/batch_decoder.h"
#include "gpt2/generate/generate.h"
#include "gpt2/generate/scheduler.h"
#include "gpt2/model/gpt.h"
#include "gpu/need_cuda.h"

namespace gpt2 {
namespace {


GPT gpt2_on_cuda(torch::ScalarType dtype) {
  GPT model(GPTConfig::preset("gpt2").init(InitOptions().seed(5)));
  model->to(kCuda, dtype);
  model->eval();
  return model;
}

std::vector<std::vector<int64_t>> prompts_of(const std::vector<int64_t>& lengths) {
  std::vector<std::vector<int64_t>> prompts;
  for (size_t r = 0; r < lengths.size(); ++r) {
    std::vector<int64_t> p;
    for (int64_t i = 0; i < lengths[r]; ++i) p.push_back((1000 * static_cast<int64_t>(r) + 37 * i) % 50257);
    prompts.push_back(p);
  }
  return prompts;
}

struct Agreement {
  double max_diff = 0;        // largest |graphed - plain| logit over all steps
  double max_logit = 0;       // largest |plain| logit
  int64_t near_ties = 0;      // steps whose two best plain logits are within 2 x that step's diff
  int64_t unexplained = 0;    // steps whose argmax differs at no near tie
  bool graphed = false;
};

// Feeds both decoders `text` (the plain path's output for each prompt) and
// compares every step's logits.
Agreement teacher_forced(GPTImpl& model, const std::vector<std::vector<int64_t>>& prompts,
                         const std::vector<std::vector<int64_t>>& text) {
  torch::NoGradGuard no_grad;
  BatchDecoder plain(model, true, DecodeSteps::kDynamic), graphed(model, true, DecodeSteps::kGraphed);
  for (const auto& p : prompts) {
    plain.add(p);
    graphed.add(p);
  }
  Agreement a;
  for (size_t step = 0; step < text[0].size(); ++step) {
    const auto want = plain.next_logits().to(torch::kFloat), got = graphed.next_logits().to(torch::kFloat);
    const auto diff = (got - want).abs().amax(-1);                 // (B)
    const auto top = std::get<0>(want.topk(2, -1));                // (B, 2)
    const auto gap = top.select(1, 0) - top.select(1, 1);          // (B)
    const auto flipped = got.argmax(-1).ne(want.argmax(-1));       // (B)
    const auto tie = gap.le(2 * diff);
    a.max_diff = std::max(a.max_diff, diff.max().item<double>());
    a.max_logit = std::max(a.max_logit, want.abs().max().item<double>());
    a.near_ties += tie.sum().item<int64_t>();
    a.unexplained += (flipped & tie.logical_not()).sum().item<int64_t>();
    std::vector<int64_t> next;
    for (const auto& row : text) next.push_back(row[step]);
    plain.append(next);
    graphed.append(next);
  }
  a.graphed = graphed.graphed();
  if (!a.graphed) std::cout << "not graphed: " << graphed.why_not_graphed() << "\n";
  return a;
}

void check_dtype(torch::ScalarType dtype, double relative_bound) {
  GPT model = gpt2_on_cuda(dtype);
  for (const auto& lengths : {std::vector<int64_t>{16}, std::vector<int64_t>{3, 16, 9, 1}}) {
    const auto prompts = prompts_of(lengths);
    const auto options = SamplingOptions().temperature(0).max_new_tokens(256);
    const auto plain = generate(*model, prompts, SamplingOptions(options).cuda_graphs(false));
    const auto graphed = generate(*model, prompts, SamplingOptions(options).cuda_graphs(true));
    const Agreement a = teacher_forced(*model, prompts, plain);
    std::cout << c10::toString(dtype) << ", batch " << lengths.size() << ": largest logit "
              << "difference " << a.max_diff << " of logits up to " << a.max_logit << ", "
              << a.near_ties << " near ties\n";
    EXPECT_TRUE(a.graphed) << "the steps did not replay a graph";
    EXPECT_LE(a.max_diff, relative_bound * a.max_logit);
    EXPECT_EQ(a.unexplained, 0) << "argmax differs where no near tie explains it";
    if (a.near_ties == 0) {
      EXPECT_EQ(graphed, plain) << "no near tie, yet the greedy texts differ";
    }
  }
}

// float32: the products and reductions are float32's in both paths; only
// the attention's sum over masked (zero) slots may be ordered otherwise.
TEST(CudaDecodeGraph, Float32GreedyTextEqualsThePlainPathFor256Tokens) {
  NEED_CUDA();
  check_dtype(torch::kFloat, 1e-4);
}

// bfloat16 weights and activations: each op rounds to 8 bits of mantissa
// (relative 2^-9), and a logit passes through a dozen blocks of such
// roundings, so a bound of 2^-4 of the largest logit leaves room for the
// two paths' different orders of summation and no more.
TEST(CudaDecodeGraph, Bfloat16PartsOnlyAtNearTies) {
  NEED_CUDA();
  check_dtype(torch::kBFloat16, 1.0 / 16);
}

// Rows that join and leave the batch: over a cache of 4 slots made at the
// start (as the server makes its own), the steps run over 1, 2 and 4 slots
// (1, 2, 3 rows, then 2 again), one graph for each count, replayed as the
// rows change, and the logits still equal the plain path's. (A cache that
// grows is made again with its graphs; the plain path makes its own.)
TEST(CudaDecodeGraph, RowsJoiningAndLeavingReplayAGraphPerRowCount) {
  NEED_CUDA();
  GPT model = gpt2_on_cuda(torch::kFloat);
  torch::NoGradGuard no_grad;
  BatchDecoder plain(*model, true, DecodeSteps::kDynamic);
  BatchDecoder graphed(*model, true, DecodeSteps::kGraphed, /*slots=*/4);
  const auto prompts = prompts_of({4, 9, 1});
  for (BatchDecoder* d : {&plain, &graphed}) d->add(prompts[0]);
  for (int step = 0; step < 24; ++step) {
    if (step == 5) {
      for (BatchDecoder* d : {&plain, &graphed}) d->add(prompts[1]);
    }
    if (step == 11) {
      for (BatchDecoder* d : {&plain, &graphed}) d->add(prompts[2]);
    }
    if (step == 17) {
      for (BatchDecoder* d : {&plain, &graphed}) d->remove(0);
    }
    const auto want = plain.next_logits(), got = graphed.next_logits();
    ASSERT_EQ(got.sizes(), want.sizes()) << "step " << step;
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-3) << "step " << step;
    const auto next = want.argmax(-1).to(torch::kCPU);
    const std::vector<int64_t> t(next.data_ptr<int64_t>(), next.data_ptr<int64_t>() + next.numel());
    plain.append(t);
    graphed.append(t);
  }
  EXPECT_TRUE(graphed.graphed()) << graphed.why_not_graphed();
  EXPECT_EQ(graphed.captures(), 3) << "one graph each for 1, 2 and 4 slots";
}

// The server's scheduler on a GPU: requests that arrive together and
// apart, more than its slots, past the block, each greedy text equal to its
// prompt decoded alone on the CPU. A wide init (std 0.5) spreads the
// logits, so no argmax sits on a near tie that the GPU's rounding could
// flip.
TEST(CudaScheduler, GraphedRequestsEqualEachPromptAloneOnTheCpu) {
  NEED_CUDA();
  const GPTConfig config = GPTConfig().block_size(32).vocab_size(96).n_layer(2).n_head(4)
                               .n_embd(64).init(InitOptions().seed(3).std(0.5));
  GPT cpu(config);
  cpu->eval();
  GPT gpu(config);
  gpu->to(kCuda);
  const std::vector<std::vector<int64_t>> prompts = {
      {1, 2, 3}, {4}, {5, 6, 7, 8, 9, 10, 11}, {12, 13}, {14, 15, 16, 17}, {18}, {19, 20, 21}};
  std::mutex m;
  std::condition_variable done;
  std::vector<std::vector<int64_t>> got(prompts.size());
  size_t finished = 0;
  {
    Scheduler scheduler(gpu, /*max_batch=*/4);
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerationRequest r;
      r.prompt = prompts[i];
      r.options = SamplingOptions().temperature(0).max_new_tokens(20 + 5 * static_cast<int64_t>(i));
      r.on_token = [&, i](int64_t t) {
        std::lock_guard<std::mutex> lock(m);
        got[i].push_back(t);
        return true;
      };
      r.on_finish = [&](FinishReason) {
        std::lock_guard<std::mutex> lock(m);
        ++finished;
        done.notify_all();
      };
      scheduler.submit(std::move(r));
      if (i == 3) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // some arrive later
    }
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(60), [&] { return finished == prompts.size(); }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto want = generate(*cpu, {prompts[i]},
                               SamplingOptions().temperature(0).max_new_tokens(20 + 5 * static_cast<int64_t>(i)))[0];
    EXPECT_EQ(got[i], want) << "request " << i;
  }
}

// Graphed, the scheduler makes its cache for max_batch as it starts: one
// that cannot be allocated fails there, naming the slots, not each request.
TEST(CudaScheduler, ACacheTooLargeFailsAtTheStart) {
  NEED_CUDA();
  GPT gpu(GPTConfig().block_size(32).vocab_size(96).n_layer(2).n_head(4).n_embd(64));
  gpu->to(kCuda);
  try {
    Scheduler scheduler(gpu, /*max_batch=*/int64_t{1} << 36);
    FAIL() << "a cache of 2^36 slots was made";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(" slots ("), std::string::npos) << e.what();
  }
  Scheduler fits(gpu, /*max_batch=*/2);  // and the model is still usable
  EXPECT_EQ(fits.running(), 0);
}

}  // namespace
}  // namespace gpt2
