#include "gpt2/ops/ops.h"
#include "gpt2/ops/cpu/matmul.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>
#include <torch/types.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/model/modules.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/cpu/sgemm.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using testing::BackendScope;

struct Grads {
  torch::Tensor y, dx, dw, db;
};

// y = linear(x, w, b) and the gradients of sum(y * upstream), by `backend`.
Grads run(MatmulBackend backend, torch::Tensor x, torch::Tensor w, torch::Tensor b,
          const torch::Tensor& upstream) {
  BackendScope scope(backend);
  x = x.detach().requires_grad_();
  w = w.detach().requires_grad_();
  if (b.defined()) b = b.detach().requires_grad_();
  auto y = ops::linear(x, w, b);
  (y * upstream).sum().backward();
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

// The oracle: torch::linear in float64.
Grads exact(torch::Tensor x, torch::Tensor w, torch::Tensor b, const torch::Tensor& upstream) {
  BackendScope scope(MatmulBackend::kTorch);
  auto d = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kDouble) : t; };
  return run(MatmulBackend::kTorch, d(x), d(w), d(b), d(upstream));
}

// Float32 sums of K products of N(0,1) numbers: the rounding error grows like
// sqrt(K) * 2^-24 * |terms|, about 1e-6 for K = 96; 1e-4 is far above that
// and far below an indexing mistake (an O(1) error).
void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, 1e-4, 1e-4))
      << what << ": max |diff| " << (got.to(torch::kDouble) - want).abs().max().item<double>();
}

void expect_matches_float64(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  auto sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  const auto upstream = torch::randn(sizes);
  const Grads want = exact(x, w, b, upstream);
  for (MatmulBackend backend : {MatmulBackend::kTorch, MatmulBackend::kOneDnn}) {
    if (backend == MatmulBackend::kOneDnn && !onednn_available()) continue;
    const std::string name = to_string(backend);
    const Grads got = run(backend, x, w, b, upstream);
    expect_close(got.y, want.y, name + " y");
    expect_close(got.dx, want.dx, name + " dx");
    expect_close(got.dw, want.dw, name + " dw");
    if (b.defined()) expect_close(got.db, want.db, name + " db");
  }
}

TEST(Matmul, TheBuildsChoiceIsTheDefault) {
  // setup.sh installs libdnnl-dev, so the project's own build has it.
  EXPECT_EQ(onednn_available(), bool(GPT2_BUILT_WITH_ONEDNN));
  EXPECT_EQ(matmul_backend(), choose_matmul_backend().backend);
}

TEST(Matmul, LinearMatchesFloat64WithAndWithoutBias) {
  torch::manual_seed(0);
  const auto x = torch::randn({3, 5, 96}), w = torch::randn({40, 96}), b = torch::randn({40});
  expect_matches_float64(x, w, b);
  expect_matches_float64(x, w, torch::Tensor());
  expect_matches_float64(torch::randn({96}), w, b);  // one vector in, one out
}

TEST(Matmul, LinearReadsStridedAndTransposedOperands) {
  torch::manual_seed(1);
  const auto big = torch::randn({4, 6, 96});
  const auto w = torch::randn({40, 96}), b = torch::randn({40});
  expect_matches_float64(big.select(1, 5), w, b);                        // rows 6 * 96 apart
  expect_matches_float64(torch::randn({96, 7}).t(), w, b);                // columns apart
  expect_matches_float64(torch::randn({1, 96}).expand({5, 96}), w, b);    // one row, 5 times
  expect_matches_float64(big.select(1, 0), torch::randn({96, 40}).t(), b);  // W transposed
}

// A weight whose rows lie 4 KiB apart is copied to longer rows before
// oneDNN reads it (sgemm.h): the input gradient's product on every ISA, the
// forward's on AVX-512. The copy must take each row's own columns only,
// including from a view whose rows are longer than its columns.
#if GPT2_BUILT_WITH_ONEDNN
TEST(Matmul, WeightsWithRowsFourKibApartAreReadRight) {
  BackendScope scope(MatmulBackend::kOneDnn);
  EXPECT_TRUE(detail::widen_b(false, false, 256, 1024, 1024));   // the input gradient's B
  EXPECT_FALSE(detail::widen_b(false, false, 256, 1000, 1000));  // another stride
  EXPECT_FALSE(detail::widen_b(false, false, 64, 1024, 1024));   // 256 KiB: too small to pay
  EXPECT_FALSE(detail::widen_b(true, false, 256, 1024, 1024));   // a weight gradient's
  torch::manual_seed(3);
  const auto b = torch::randn({256});
  expect_matches_float64(torch::randn({16, 1024}), torch::randn({256, 1024}), b);
  const auto wide = torch::randn({300, 1024});
  const auto w = wide.narrow(1, 0, 1000);  // rows 1024 apart, 1000 columns each
  ASSERT_EQ(w.stride(0), 1024);
  expect_matches_float64(torch::randn({16, 1000}), w, torch::randn({300}));
  EXPECT_TRUE(detail::widen_b(false, false, 300, 1000, 1024));
}
#endif

// The forward's x W^T of 16 rows or more runs on oneDNN's matmul primitive
// where it has brgemm kernels (AVX-512; onednn_matmul.cpp), on sgemm
// elsewhere (Matmul.under_avx2 runs this again under an AVX2 limit).
TEST(Matmul, ForwardProductsOnTheMatmulPrimitiveMatchFloat64) {
  BackendScope scope(MatmulBackend::kOneDnn);
  EXPECT_FALSE(detail::matmul_nt_takes(8, 3072, 768));    // few rows: sgemm's
  EXPECT_TRUE(detail::matmul_nt_takes(16, 3072, 768));
  EXPECT_TRUE(detail::matmul_nt_takes(4, 50257, 768));    // a head of the vocabulary's size
  EXPECT_FALSE(detail::matmul_nt_takes(2, 50257, 768));
  // The rule's reason, printed by inspect, bench and the runtime line, says so.
  EXPECT_EQ(choose_matmul_backend().reason.find("brgemm") != std::string::npos,
            detail::onednn_runs_avx512())
      << choose_matmul_backend().reason;
  torch::manual_seed(5);
  const auto x = torch::randn({64, 96}), w = torch::randn({40, 96}), b = torch::randn({40});
  // Straight, and C += A B^T (the bias's rows are copied into C first).
  for (bool accumulate : {false, true}) {
    auto c = accumulate ? b.expand({64, 40}).contiguous() : torch::full({64, 40}, 7.0f);
    const auto before = c.clone();
    const bool ran = detail::matmul_nt(64, 40, 96, {x.data_ptr<float>(), 96},
                                       {w.data_ptr<float>(), 96}, accumulate, c.data_ptr<float>(), 40);
    EXPECT_EQ(ran, detail::onednn_runs_avx512()) << "accumulate " << accumulate;
    if (!ran) {
      EXPECT_TRUE(torch::equal(c, before)) << "declined, yet wrote C";
      continue;
    }
    const auto want = x.to(torch::kDouble).mm(w.to(torch::kDouble).t()) +
                      (accumulate ? b.to(torch::kDouble) : torch::zeros({40}, torch::kDouble));
    expect_close(c, want, accumulate ? "A B^T + C" : "A B^T");
  }
  // Through linear: rows apart, a weight whose rows lie 4 KiB apart.
  const auto big = torch::randn({2, 48, 3, 96});
  expect_matches_float64(big.select(2, 1), w, b);
  expect_matches_float64(torch::randn({40, 1024}), torch::randn({256, 1024}), {});
}

TEST(Matmul, InputsAreNotWritten) {
  BackendScope scope(MatmulBackend::kOneDnn);
  for (int64_t rows : {1, 4}) {  // one row: the bias's broadcast is itself contiguous
    const auto x = torch::randn({rows, 8}), w = torch::randn({3, 8}), b = torch::randn({3});
    const auto x0 = x.clone(), w0 = w.clone(), b0 = b.clone();
    ops::linear(x, w, b);
    ops::linear(x, w, b);
    EXPECT_TRUE(torch::equal(x, x0) && torch::equal(w, w0) && torch::equal(b, b0)) << rows;
  }
}

TEST(Matmul, OnednnIsTheGradientPathOfFloat32CpuTensors) {
  const auto x = torch::randn({2, 8}, torch::requires_grad());
  const auto w = torch::randn({3, 8}, torch::requires_grad());
  const auto grad_fn = [&](MatmulBackend backend) {
    BackendScope scope(backend);
    auto node = ops::linear(x, w, torch::Tensor()).grad_fn();
    while (node->name() == "ViewBackward0") node = node->next_edge(0).function;  // the reshape
    return node->name();
  };
  EXPECT_NE(grad_fn(MatmulBackend::kOneDnn).find("LinearFunction"), std::string::npos)
      << grad_fn(MatmulBackend::kOneDnn);
  EXPECT_EQ(grad_fn(MatmulBackend::kTorch).find("LinearFunction"), std::string::npos)
      << grad_fn(MatmulBackend::kTorch);
}

TEST(Matmul, OtherTypesAndEmptyInputsTakeTorchsPath) {
  BackendScope scope(MatmulBackend::kOneDnn);
  const auto x = torch::randn({4, 8}, torch::kDouble), w = torch::randn({3, 8}, torch::kDouble);
  EXPECT_TRUE(torch::equal(ops::linear(x, w, {}), torch::nn::functional::linear(x, w)));
  const auto none = ops::linear(torch::randn({0, 8}), torch::randn({3, 8}), torch::randn({3}));
  EXPECT_EQ(none.sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_THROW(ops::linear(torch::randn({4, 8}), torch::randn({3, 9}), {}), c10::Error);
}

TEST(Matmul, OnlyTheGradientsAskedForAreComputed) {
  BackendScope scope(MatmulBackend::kOneDnn);
  const auto x = torch::randn({4, 8});  // data: no gradient
  const auto w = torch::randn({3, 8}, torch::requires_grad());
  ops::linear(x, w, {}).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  // d/dW sum(x W^T) = each row of W gets the column sums of x.
  EXPECT_TRUE(torch::allclose(w.grad(), x.sum(0).expand({3, 8}), 1e-5, 1e-5));
}

TEST(Matmul, TiedModelTrainsTheSameOnBothBackends) {
  const auto config = GPTConfig().n_layer(2).n_head(2).n_embd(32).vocab_size(97).block_size(16);
  const auto idx = torch::randint(97, {3, 16}), targets = torch::randint(97, {3, 16});
  std::vector<torch::Tensor> losses, wte_grads;
  for (MatmulBackend backend : {MatmulBackend::kTorch, MatmulBackend::kOneDnn}) {
    BackendScope scope(backend);
    torch::manual_seed(7);
    GPT model(config);
    auto loss = model(idx, targets).loss;
    loss.backward();
    const auto& wte = model->transformer->wte->weight;
    ASSERT_EQ(wte.data_ptr(), model->lm_head->weight.data_ptr());
    losses.push_back(loss.detach());
    wte_grads.push_back(wte.grad());  // the embedding's and the head's, summed
  }
  EXPECT_NEAR(losses[0].item<double>(), losses[1].item<double>(), 1e-5);
  EXPECT_TRUE(torch::allclose(wte_grads[0], wte_grads[1], 1e-4, 1e-6));
}

// The fused path against the module's torch path (scores, mask, softmax,
// dropout, times v as four torch ops), both in one float32 module.
struct AttentionRun {
  torch::Tensor y, dx, dw;
};

AttentionRun attention(MatmulBackend backend, int64_t T, double dropout, bool training) {
  BackendScope scope(backend);
  const auto config = GPTConfig().n_layer(1).n_head(4).n_embd(64).block_size(32).dropout(dropout);
  torch::manual_seed(3);
  CausalSelfAttention attn(config);
  attn->train(training);
  const auto x = torch::randn({3, T, 64}, torch::requires_grad());
  const auto upstream = torch::randn({3, T, 64});
  torch::manual_seed(11);  // the dropout draws
  const auto y = attn(x, nullptr, 0, causal_mask(T, 0, torch::kCPU));
  (y * upstream).sum().backward();
  return {y.detach(), x.grad(), attn->c_attn->weight.grad()};
}

TEST(Matmul, FusedAttentionMatchesTheTorchPath) {
  for (int64_t T : {1, 5, 32}) {
    for (double dropout : {0.0, 0.25}) {
      const auto want = attention(MatmulBackend::kTorch, T, dropout, true);
      const auto got = attention(MatmulBackend::kOneDnn, T, dropout, true);
      const std::string what = "T " + std::to_string(T) + " dropout " + std::to_string(dropout);
      // Same dropout draws, so the same numbers up to float rounding.
      expect_close(got.y, want.y.to(torch::kDouble), what + " y");
      expect_close(got.dx, want.dx.to(torch::kDouble), what + " dx");
      expect_close(got.dw, want.dw.to(torch::kDouble), what + " dW of c_attn");
    }
  }
}

TEST(Matmul, FusedAttentionIsCausalAndDropsOnlyInTraining) {
  const auto config = GPTConfig().n_layer(1).n_head(2).n_embd(16).block_size(8).dropout(0.5);
  BackendScope scope(MatmulBackend::kOneDnn);
  CausalSelfAttention attn(config);
  attn->eval();
  auto x = torch::randn({1, 8, 16});
  const auto y = attn(x, nullptr, 0, causal_mask(8, 0, torch::kCPU)).detach();
  EXPECT_TRUE(torch::equal(y, attn(x, nullptr, 0, causal_mask(8, 0, torch::kCPU))));  // no dropout
  x.select(1, 7).add_(1.0);  // the last position changes...
  const auto after = attn(x, nullptr, 0, causal_mask(8, 0, torch::kCPU)).detach();
  EXPECT_TRUE(torch::allclose(after.narrow(1, 0, 7), y.narrow(1, 0, 7)));  // ...earlier ones do not see it
  EXPECT_FALSE(torch::allclose(after.select(1, 7), y.select(1, 7)));
}

TEST(Matmul, SettingTheBackendIsCheckedAndNamed) {
  EXPECT_EQ(to_string(MatmulBackend::kTorch), "torch");
  EXPECT_EQ(to_string(MatmulBackend::kOneDnn), "onednn");
  if (!onednn_available()) {
    EXPECT_THROW(set_matmul_backend(MatmulBackend::kOneDnn), Error);
  }
}

// The rule: onednn in a build with it (docs/speed.md: the faster or equal
// over a step's products on every CPU measured), torch without; forcing and
// resetting move matmul_backend() and its stated reason.
TEST(Matmul, TheRuleAndForcingAChoice) {
  const BackendChoice rule = choose_matmul_backend();
  EXPECT_EQ(rule.backend, onednn_available() ? MatmulBackend::kOneDnn : MatmulBackend::kTorch);
  EXPECT_FALSE(rule.reason.empty());
  EXPECT_FALSE(rule.forced);
  EXPECT_TRUE(is_generic_openblas_core("Prescott"));
  EXPECT_FALSE(is_generic_openblas_core("Haswell"));
  EXPECT_EQ(matmul_backend_choice().reason, rule.reason);
  set_matmul_backend(MatmulBackend::kTorch);
  EXPECT_EQ(matmul_backend(), MatmulBackend::kTorch);
  EXPECT_EQ(matmul_backend_choice().reason, "set by set_matmul_backend");
  EXPECT_TRUE(matmul_backend_choice().forced);
  reset_matmul_backend();
  EXPECT_EQ(matmul_backend(), rule.backend);
  EXPECT_EQ(matmul_backend_choice().reason, rule.reason);
}

// Threads torch's parallel_for ran `n` tasks on (this file is built with
// -fopenmp, as the library's files that call it are).
int threads_used(int64_t n) {
  std::mutex m;
  std::set<int> ids;
  at::parallel_for(0, n, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(m);
    ids.insert(at::get_thread_num());
  });
  return static_cast<int>(ids.size());
}

// With torch's pool 1 wide (Debian's default on 2 vCPUs), gpt2's kernels
// still run on kernel_threads(), and the pool is 1 wide again after: in a
// scope, after a Linear's forward and backward, and after a model's forward.
TEST(Matmul, KernelsRunOnKernelThreadsAndLeaveTorchsPoolAlone) {
  const int torch_before = at::get_num_threads();
  at::set_num_threads(1);
  set_kernel_threads(3);
  EXPECT_EQ(kernel_threads(), 3);
  int inside = 0, used = 0;
  {
    KernelTeam team;
    inside = at::get_num_threads();
    used = threads_used(64);
  }
  const int after_scope = at::get_num_threads();
  auto x = torch::randn({4, 8}, torch::requires_grad()), w = torch::randn({5, 8});
  ops::linear(x, w, {}).sum().backward();
  const int after_linear = at::get_num_threads();
  GPT model(GPTConfig().block_size(8).vocab_size(11).n_layer(1).n_head(2).n_embd(8));
  model(torch::randint(11, {2, 8}), torch::randint(11, {2, 8})).loss.backward();
  const int after_model = at::get_num_threads();
  int nested_before = -1, nested = -2;
  {
    KernelTeam outer;
    at::parallel_for(0, 3, 1, [&](int64_t begin, int64_t) {
      if (begin != 0) return;
      nested_before = at::get_num_threads();
      KernelTeam team;  // inside a parallel region: nothing changes
      nested = at::get_num_threads();
    });
  }
  EXPECT_THROW(set_kernel_threads(-1), Error);
  set_kernel_threads(0);
  at::set_num_threads(torch_before);
  EXPECT_EQ(inside, 3);
  EXPECT_EQ(used, 3);
  EXPECT_EQ(after_scope, 1);
  EXPECT_EQ(after_linear, 1);
  EXPECT_EQ(after_model, 1);
  EXPECT_EQ(nested, nested_before);
  EXPECT_EQ(kernel_threads(), usable_cores());
}

}  // namespace
}  // namespace gpt2
