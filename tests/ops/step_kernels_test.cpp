// The step's own kernels at the model's two ends: the pooled buffers, the
// cross-entropy, the tied embedding whose gradient adds in place.
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gpt2/ops/ops.h"
#include "gpt2/error.h"
#include "gpt2/model/gpt.h"
#include "gpt2/ops/memory/buffer_pool.h"
#include "gpt2/ops/cpu/cross_entropy.h"
#include "gpt2/ops/cpu/matmul.h"
#include "gpt2/ops/cpu/pointwise.h"
#include "gpt2/ops/cpu/tied_embedding.h"
#include "gpt2/ops/memory.h"
#include "gpt2/runtime/runtime.h"
#include "test_util.h"

namespace gpt2 {
namespace {

using testing::BackendScope;

// The autograd node that made `t`: the library's own function (its C++
// type's name) or torch's ("NativeLayerNormBackward0", ...).
std::string node_of(const torch::Tensor& t) {
  return t.grad_fn() ? t.grad_fn()->name() : std::string("(no node)");
}

// Restores the pool's default cap and empties it.
class PoolScope {
 public:
  PoolScope() { release_kernel_memory(); }
  ~PoolScope() {
    set_kernel_memory_cap(-1);
    release_kernel_memory();
  }
};

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(BufferPool, AFreedBlockIsTheNextOfItsSize) {
  PoolScope scope;
  set_kernel_memory_cap(256 * kMiB);
  void* first = nullptr;
  {
    auto t = detail::empty_pooled({5 * kMiB});  // 20 MiB: pooled
    first = t.data_ptr();
    t.fill_(1);
    EXPECT_EQ(kernel_memory().free_bytes, 0);
  }
  EXPECT_EQ(kernel_memory().free_bytes, 20 * kMiB);
  EXPECT_EQ(kernel_memory().free_blocks, 1);
  {
    auto again = detail::empty_pooled({5 * kMiB - 7});  // rounds to the same 2 MiB multiple
    EXPECT_EQ(again.data_ptr(), first);
    EXPECT_EQ(kernel_memory().free_blocks, 0);
    auto other = detail::empty_pooled({9 * kMiB});      // another size: a new block
    EXPECT_NE(other.data_ptr(), first);
  }
  EXPECT_EQ(kernel_memory().free_bytes, 20 * kMiB + 36 * kMiB);
  release_kernel_memory();
  EXPECT_EQ(kernel_memory().free_bytes, 0);
  EXPECT_EQ(kernel_memory().free_blocks, 0);
}

TEST(BufferPool, SmallTensorsAreTorchsAndTheCapHolds) {
  PoolScope scope;
  { auto small = detail::empty_pooled({1024, 1024}); }  // 4 MiB: torch::empty's
  EXPECT_EQ(kernel_memory().free_bytes, 0);
  set_kernel_memory_cap(30 * kMiB);
  {
    auto a = detail::empty_pooled({5 * kMiB}), b = detail::empty_pooled({5 * kMiB});
  }
  EXPECT_EQ(kernel_memory().free_bytes, 20 * kMiB);  // the second would pass the cap
  EXPECT_EQ(kernel_memory().cap_bytes, 30 * kMiB);
  set_kernel_memory_cap(10 * kMiB);                   // lowering it frees down to it
  EXPECT_EQ(kernel_memory().free_bytes, 0);
  set_kernel_memory_cap(0);
  { auto c = detail::empty_pooled({5 * kMiB}); }
  EXPECT_EQ(kernel_memory().free_bytes, 0);
  EXPECT_THROW(set_kernel_memory_cap(-2), Error);
  set_kernel_memory_cap(-1);
  // The default: an eighth of the memory this process may use.
  EXPECT_EQ(kernel_memory().cap_bytes, static_cast<int64_t>(usable_memory().bytes / 8));
  EXPECT_GT(kernel_memory().cap_bytes, 0);
}

TEST(BufferPool, APooledTensorResizesAsAnyOther) {
  PoolScope scope;
  auto t = detail::empty_pooled({5 * kMiB});
  t.resize_({10 * kMiB});
  t.fill_(2);
  EXPECT_EQ(t.sum().item<double>(), 2.0 * 10 * kMiB);
  t.resize_({4});
  EXPECT_EQ(t.numel(), 4);
}

// The training step takes its large buffers from the pool and gives them
// back: a second step of a model whose logits are pooled (256 x 16,384
// floats) adds no block.
TEST(BufferPool, ASecondStepReusesTheFirstStepsBlocks) {
  PoolScope scope;
  GPT model(testing::tiny_config().vocab_size(16384).block_size(64).init(InitOptions().seed(1)));
  auto idx = torch::randint(16384, {4, 64});
  auto step = [&] {
    model->zero_grad();
    model->forward(idx, idx).loss.backward();
  };
  step();
  const KernelMemory after_one = kernel_memory();
  EXPECT_GT(after_one.free_blocks, 0);
  step();
  EXPECT_EQ(kernel_memory().free_blocks, after_one.free_blocks);
  EXPECT_EQ(kernel_memory().free_bytes, after_one.free_bytes);
}

// Minor page faults of this process so far.
long minor_faults() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Mallocs, touches and frees six 20 MB blocks (the size of a block the
// step frees and asks for again); returns the pages faulted doing it.
long faults_of_a_round() {
  const long before = minor_faults();
  std::vector<void*> blocks;
  for (int i = 0; i < 6; ++i) {
    blocks.push_back(std::malloc(20 * kMiB));
    if (!blocks.back()) return -1;
    std::memset(blocks.back(), i + 1, 20 * kMiB);
  }
  volatile unsigned char sum = 0;
  for (void* b : blocks) sum = sum + static_cast<unsigned char*>(b)[12345];
  for (void* b : blocks) std::free(b);
  return minor_faults() - before;
}

// The pool leaves glibc's policy alone: it stays glibc's default after the
// first pooled block, or the app's where the environment tuned malloc (the
// BufferPool.malloc_tuned entry runs this under MALLOC_TOP_PAD_), and
// keep_freed_memory() does nothing there. Where the app asks for it
// (keep_freed_memory, as configure_runtime calls it), freed blocks of 20 MB
// stay in the heap: a second round faults almost no page, where glibc's
// default hands them back and faults all 30,720 again.
TEST(BufferPool, HeapPolicyIsGlibcsUntilTheAppChooses) {
  PoolScope scope;
  const bool tuned = std::getenv("MALLOC_TOP_PAD_") || std::getenv("MALLOC_TRIM_THRESHOLD_") ||
                     std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_MMAP_MAX_");
  const HeapPolicy before = heap_policy();  // kApps where an earlier test here chose
  if (tuned) {
    EXPECT_EQ(before, HeapPolicy::kApps) << "the environment's tunable is the app's choice";
  }
  const auto pooled = detail::empty_pooled({5 * kMiB});  // 20 MB: from the pool
  EXPECT_EQ(heap_policy(), tuned ? HeapPolicy::kApps : before) << "the pool changed the policy";
  if (tuned) {
    EXPECT_FALSE(keep_freed_memory()) << "the environment's choice stands there too";
    return;
  }
  ASSERT_TRUE(keep_freed_memory());
  EXPECT_EQ(heap_policy(), HeapPolicy::kApps);
  ASSERT_GE(faults_of_a_round(), 0);
  const long second = faults_of_a_round();
  EXPECT_LT(second, 1000) << "pages faulted by the second round of six 20 MB blocks";
}

struct Loss {
  torch::Tensor loss, grad;
};

Loss loss_of(const torch::Tensor& logits, const torch::Tensor& targets, bool torchs) {
  auto x = logits.detach().requires_grad_();
  namespace F = torch::nn::functional;
  auto loss = torchs ? F::cross_entropy(x, targets, F::CrossEntropyFuncOptions().ignore_index(-1))
                     : ops::cross_entropy(x, targets);
  (loss * 3).backward();
  return {loss.detach(), x.grad()};
}

TEST(CrossEntropy, EqualsTorchsLossAndGradientWithIgnoredTargets) {
  torch::manual_seed(3);
  auto logits = torch::randn({37, 301}) * 4;
  auto targets = torch::randint(301, {37});
  targets.index_put_({torch::arange(0, 37, 5)}, -1);  // every fifth row ignored
  ASSERT_TRUE(cpu::cross_entropy_applies(logits, targets));
  const Loss ours = loss_of(logits, targets, false), theirs = loss_of(logits, targets, true);
  EXPECT_NEAR(ours.loss.item<double>(), theirs.loss.item<double>(), 1e-6);
  EXPECT_TRUE(torch::allclose(ours.grad, theirs.grad, 1e-5, 1e-8))
      << (ours.grad - theirs.grad).abs().max().item<double>();
  // An ignored row has no gradient at all.
  EXPECT_EQ(ours.grad[5].abs().sum().item<double>(), 0.0);
  // float64 oracle of the loss: the mean over counted rows of lse - x[t].
  auto x = logits.to(torch::kDouble);
  auto valid = targets.ne(-1);
  auto lse = x.logsumexp(1);
  auto picked = x.gather(1, targets.clamp_min(0).unsqueeze(1)).squeeze(1);
  const double want = ((lse - picked) * valid).sum().item<double>() / valid.sum().item<double>();
  EXPECT_NEAR(ours.loss.item<double>(), want, 1e-5);
}

TEST(CrossEntropy, LargeLogitsAreStableAndEveryRowIgnoredIsNaN) {
  auto logits = torch::tensor({{1000.0f, 0.0f, -1000.0f}, {88.0f, 89.0f, 90.0f}});
  auto targets = torch::tensor({int64_t{0}, int64_t{2}});
  const Loss ours = loss_of(logits, targets, false), theirs = loss_of(logits, targets, true);
  EXPECT_TRUE(std::isfinite(ours.loss.item<double>()));
  EXPECT_NEAR(ours.loss.item<double>(), theirs.loss.item<double>(), 1e-6);
  EXPECT_TRUE(torch::allclose(ours.grad, theirs.grad, 1e-5, 1e-8));
  const Loss none = loss_of(logits, torch::full({2}, -1, torch::kLong), false);
  EXPECT_TRUE(std::isnan(none.loss.item<double>()));
}

TEST(CrossEntropy, ATargetOutsideTheVocabularyIsANamedError) {
  auto logits = torch::randn({3, 5});
  for (const int64_t bad : {int64_t{-5}, int64_t{5}}) {
    auto targets = torch::tensor({1, -1, 2}, torch::kLong);
    targets[2] = bad;
    const std::string message =
        testing::error_of<InputError>([&] { ops::cross_entropy(logits, targets); });
    EXPECT_NE(message.find("target " + std::to_string(bad) + " at row 2"), std::string::npos)
        << message;
  }
}

TEST(CrossEntropy, FallsBackToTorchsWhereItDoesNotApply) {
  auto logits = torch::randn({4, 9}, torch::kDouble);
  auto targets = torch::randint(9, {4});
  EXPECT_FALSE(cpu::cross_entropy_applies(logits, targets));
  {
    BackendScope torch_backend(MatmulBackend::kTorch);
    EXPECT_FALSE(cpu::cross_entropy_applies(logits.to(torch::kFloat), targets));
  }
  const Loss ours = loss_of(logits, targets, false), theirs = loss_of(logits, targets, true);
  EXPECT_TRUE(torch::equal(ours.loss, theirs.loss));
  EXPECT_TRUE(torch::equal(ours.grad, theirs.grad));
}

// W's gradient from a head product plus an embedding of W, with torch's
// embedding or the tied one.
torch::Tensor tied_grad(const torch::Tensor& w0, const torch::Tensor& idx, bool tied) {
  auto w = w0.detach().requires_grad_();
  auto h = tied ? ops::tied_embedding(idx, w) : torch::embedding(w, idx);  // (B, T, C)
  auto logits = ops::linear(h.tanh(), w, torch::Tensor());         // (B, T, V)
  (logits * logits).sum().backward();
  return w.grad();
}

TEST(TiedEmbedding, TheSummedGradientEqualsTorchsToTheBit) {
  torch::manual_seed(5);
  auto w = torch::randn({50, 16});
  auto idx = torch::tensor({3, 7, 3, 49, 0, 3, 7, 12}, torch::kLong).view({2, 4});  // repeats
  auto tied = ops::tied_embedding(idx, w.detach().requires_grad_());
  ASSERT_NE(node_of(tied).find("TiedEmbeddingFunction"), std::string::npos) << node_of(tied);
  const auto ours = tied_grad(w, idx, true), theirs = tied_grad(w, idx, false);
  ASSERT_FALSE(ours.is_sparse());
  EXPECT_TRUE(torch::equal(ours, theirs)) << (ours - theirs).abs().max().item<double>();
  EXPECT_TRUE(torch::equal(ops::tied_embedding(idx, w), torch::embedding(w, idx)));
}

TEST(TiedEmbedding, AModelsWeightGradientIsDenseAndAsWithTorchsEmbedding) {
  GPT model(testing::tiny_config().init(InitOptions().seed(11)));
  auto idx = torch::randint(96, {2, 12});
  model->forward(idx, idx).loss.backward();
  const auto grad = model->lm_head->weight.grad();
  ASSERT_FALSE(grad.is_sparse());
  EXPECT_TRUE(grad.is_same(model->transformer->wte->weight.grad()));
  // embed() keeps torch's embedding: the same numbers through the same head.
  auto as_torch = model->transformer->wte->weight.detach().clone().requires_grad_();
  auto x = torch::embedding(as_torch, idx) + model->transformer->wpe(torch::arange(12));
  for (size_t i = 0; i < model->transformer->h->size(); ++i) x = model->block(i)(x);
  auto logits = ops::linear(model->transformer->ln_f(x), as_torch, torch::Tensor());
  ops::cross_entropy(logits.view({-1, 96}), idx.view(-1)).backward();
  EXPECT_TRUE(torch::allclose(grad, as_torch.grad(), 1e-5, 1e-8));
}

// LayerNorm and GELU: torch's kernels, so torch's numbers forward and
// backward, the backward on the kernel threads.
struct NormGrads {
  torch::Tensor y, dx, dw, db;
};
NormGrads norm_of(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
                  const torch::Tensor& up, bool ours) {
  auto x = x0.detach().requires_grad_(), w = w0.detach().requires_grad_();
  auto b = b0.defined() ? b0.detach().requires_grad_() : torch::Tensor();
  auto y = ours ? ops::layer_norm(x, w, b, 1e-5) : torch::layer_norm(x, {w.size(0)}, w, b, 1e-5);
  EXPECT_EQ(node_of(y).find("LayerNormFunction") != std::string::npos, ours) << node_of(y);
  (y * up).sum().backward();
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

TEST(Pointwise, LayerNormEqualsTorchsForwardAndBackward) {
  torch::manual_seed(8);
  auto x = torch::randn({3, 5, 48}) * 3 + 1, w = torch::randn({48}), b = torch::randn({48});
  auto up = torch::randn({3, 5, 48});
  for (const bool bias : {true, false}) {
    const auto ours = norm_of(x, w, bias ? b : torch::Tensor(), up, true);
    const auto theirs = norm_of(x, w, bias ? b : torch::Tensor(), up, false);
    EXPECT_TRUE(torch::equal(ours.y, theirs.y)) << bias;
    EXPECT_TRUE(torch::allclose(ours.dx, theirs.dx, 1e-5, 1e-6)) << bias;
    EXPECT_TRUE(torch::allclose(ours.dw, theirs.dw, 1e-5, 1e-6)) << bias;
    if (bias) {
      EXPECT_TRUE(torch::allclose(ours.db, theirs.db, 1e-5, 1e-6));
    }
  }
}

TEST(Pointwise, GeluEqualsTorchsForwardAndBackwardBothWays) {
  torch::manual_seed(9);
  auto x0 = torch::randn({4, 7, 33}) * 2;
  auto up = torch::randn({4, 7, 33});
  for (const std::string approximate : {"none", "tanh"}) {
    auto a = x0.detach().requires_grad_(), c = x0.detach().requires_grad_();
    auto ya = ops::gelu(a, approximate), yc = torch::gelu(c, approximate);
    EXPECT_NE(node_of(ya).find("GeluFunction"), std::string::npos) << node_of(ya);
    (ya * up).sum().backward();
    (yc * up).sum().backward();
    EXPECT_TRUE(torch::equal(ya, yc)) << approximate;
    EXPECT_TRUE(torch::equal(a.grad(), c.grad())) << approximate;
  }
  // On torch's backend, and without a backward to record, it is torch's op.
  {
    BackendScope torch_backend(MatmulBackend::kTorch);
    auto y = ops::gelu(x0.detach().requires_grad_(), "tanh");
    EXPECT_EQ(node_of(y).find("GeluFunction"), std::string::npos) << node_of(y);
    auto n = ops::layer_norm(x0.detach().requires_grad_(), torch::ones({33}), torch::Tensor(), 1e-5);
    EXPECT_EQ(node_of(n).find("LayerNormFunction"), std::string::npos) << node_of(n);
  }
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(ops::gelu(x0, "tanh").grad_fn());
  EXPECT_TRUE(torch::equal(ops::gelu(x0, "tanh"), torch::gelu(x0, "tanh")));
}

}  // namespace
}  // namespace gpt2
