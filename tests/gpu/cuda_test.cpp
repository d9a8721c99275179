// The library on a CUDA GPU, each check against the same work on the CPU.
// Every test skips, saying so, where torch::cuda::is_available() is false
// (CI, a CPU-only LibTorch); tests/gpu/run.sh runs them on a GPU machine.

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/types.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <utility>
#include <vector>

#include "gpt2/generate/generate.h"
#include "gpt2/io/checkpoint.h"
#include "gpt2/io/hf_gpt2.h"
#include "gpt2/io/llmc.h"
#include "gpt2/model/gpt.h"
#include "gpt2/model/init.h"
#include "gpt2/train/dataset.h"
#include "gpt2/train/optim.h"
#include "gpt2/train/trainer.h"
#include "gpu/need_cuda.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace gpt2 {
namespace {


GPT small_model(double std = 0.02) {
  return GPT(testing::tiny_config().block_size(64).init(InitOptions().seed(3).std(std)));
}

GPT on(const GPT& model, const torch::Device& device) {
  return GPT(std::dynamic_pointer_cast<GPTImpl>(model->clone(device)));
}

double max_relative(const torch::Tensor& a, const torch::Tensor& b) {
  const auto x = a.detach().to(torch::kCPU, torch::kDouble), y = b.detach().to(torch::kCPU, torch::kDouble);
  return ((x - y).abs().max() / y.abs().max().clamp_min(1e-12)).item<double>();
}

TEST(Cuda, ForwardAndLossEqualTheCpus) {
  NEED_CUDA();
  GPT cpu = small_model(), gpu = on(cpu, kCuda);
  torch::manual_seed(0);
  const auto x = torch::randint(96, {3, 64}), y = torch::randint(96, {3, 64});
  const GPTOutput a = cpu(x, y), b = gpu(x.to(kCuda), y.to(kCuda));
  EXPECT_TRUE(b.logits.is_cuda());
  EXPECT_LT(max_relative(b.logits, a.logits), 1e-4);
  EXPECT_LT(max_relative(b.loss, a.loss), 1e-4);
}

TEST(Cuda, TieInitAndCountsHoldOnTheDevice) {
  NEED_CUDA();
  const GPTConfig config = testing::tiny_config().n_layer(6).n_embd(128).vocab_size(4096);
  GPT model(config);
  const int64_t count = model->num_parameters();
  model->to(kCuda);
  EXPECT_EQ(model->num_parameters(), count);
  EXPECT_TRUE(model->lm_head->weight.is_cuda());
  EXPECT_EQ(model->lm_head->weight.data_ptr(), model->transformer->wte->weight.data_ptr());
  init_weights(*model, config, model->transformer->wpe.ptr().get());  // drawn on the device
  for (const auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    if (p.value().dim() < 2 || name.find("wpe") != std::string::npos) continue;
    const double want = testing::is_residual_projection(name) ? 0.02 / std::sqrt(2.0 * 6) : 0.02;
    EXPECT_NEAR(p.value().std().item<double>(), want, 0.08 * want) << name;
  }
}

TEST(Cuda, OneTrainingStepEqualsTheCpus) {
  NEED_CUDA();
  GPT cpu = small_model(), gpu = on(cpu, kCuda);
  const auto options = torch::optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1);
  auto cpu_opt = configure_optimizers(*cpu, options);
  auto gpu_opt = configure_optimizers(*gpu, options);
  torch::manual_seed(1);
  const auto x = torch::randint(96, {4, 64}), y = torch::randint(96, {4, 64});
  std::vector<double> norms;  // the CPU's two steps, then the GPU's
  for (auto [model, opt, device] : {std::tuple{cpu, cpu_opt.get(), torch::Device(torch::kCPU)},
                                    std::tuple{gpu, gpu_opt.get(), kCuda}}) {
    for (int step = 0; step < 2; ++step) {
      opt->zero_grad();
      model(x.to(device), y.to(device)).loss.backward();
      norms.push_back(opt->clip_grad_norm(model->unique_parameters(), 0.5));
      if (device.is_cuda()) {  // Python's clip_grad_norm_ on a GPU, to the bit
        std::vector<torch::Tensor> grads;
        for (const auto& p : model->unique_parameters()) grads.push_back(p.grad());
        EXPECT_EQ(norms.back(),
                  at::linalg_vector_norm(torch::stack(at::_foreach_norm(grads, 2)), 2).item<double>());
      }
      opt->step();
    }
  }
  EXPECT_NEAR(norms[2], norms[0], 1e-5 * norms[0]);
  EXPECT_NEAR(norms[3], norms[1], 1e-4 * norms[1]);
  const auto a = cpu->named_parameters(), b = gpu->named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(b[i].value().is_cuda());
    EXPECT_TRUE(torch::allclose(b[i].value().cpu(), a[i].value(), 1e-4, 1e-5)) << a[i].key();
  }
  EXPECT_EQ(gpu->lm_head->weight.data_ptr(), gpu->transformer->wte->weight.data_ptr());
}

TEST(Cuda, CheckpointsMoveBetweenCudaAndCpu) {
  NEED_CUDA();
  testing::TempDir dir;
  GPT gpu = on(small_model(), kCuda);
  auto opt = configure_optimizers(*gpu, torch::optim::AdamWOptions(1e-3));
  torch::manual_seed(2);
  gpu(torch::randint(96, {2, 64}).to(kCuda), torch::randint(96, {2, 64}).to(kCuda)).loss.backward();
  opt->step();
  TrainingState state;
  state.step = 1;
  state.optimizer = opt.get();
  save_checkpoint(dir / "gpu.pt", *gpu, state);
  Checkpoint back = load_checkpoint(dir / "gpu.pt");  // on the CPU
  const auto a = gpu->named_parameters(), b = back.model->named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(b[i].value().device().is_cpu());
    EXPECT_TRUE(torch::equal(a[i].value().cpu(), b[i].value())) << a[i].key();
  }
  // The optimizer state loads into a CPU optimizer, and into a GPU one on the GPU.
  auto cpu_opt = configure_optimizers(*back.model, torch::optim::AdamWOptions(1e-3));
  load_optimizer_state(dir / "gpu.pt", *cpu_opt);
  back.model->to(kCuda);
  auto again = configure_optimizers(*back.model, torch::optim::AdamWOptions(1e-3));
  load_optimizer_state(dir / "gpu.pt", *again);
  ASSERT_EQ(again->state().size(), back.model->unique_parameters().size());
  for (const auto& item : again->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*item.second);
    EXPECT_TRUE(s.exp_avg().is_cuda() && s.exp_avg_sq().is_cuda());
  }
  export_torchscript(*gpu, dir / "gpu.ts");  // a program of CPU tensors: loads anywhere
  const torch::jit::Module program = torch::jit::load(dir / "gpu.ts");  // no map: where the file says
  int64_t on_cpu = 0;
  for (const auto& p : program.named_parameters()) on_cpu += p.value.device().is_cpu() ? 1 : 0;
  EXPECT_EQ(on_cpu, static_cast<int64_t>(program.named_parameters().size()));
  save_checkpoint(dir / "cpu.pt", *load_checkpoint(dir / "gpu.pt").model);
  EXPECT_TRUE(torch::equal(load_checkpoint(dir / "cpu.pt").model->lm_head->weight,
                           gpu->lm_head->weight.cpu()));
}

// Every writer, given the same model on the GPU and on the CPU, writes the
// same bytes: the GPU's is written from a CPU copy (gpt2/io/detail/host_tensor.h).
TEST(Cuda, EveryWriterWritesTheCpusBytesFromTheGpu) {
  NEED_CUDA();
  testing::TempDir dir;
  GPT cpu = small_model(), gpu = on(cpu, kCuda);
  ASSERT_TRUE(gpu->lm_head->weight.is_cuda());
  using Write = std::function<void(const GPTImpl&, const std::string&)>;
  const std::vector<std::pair<std::string, Write>> writers = {
      {"ckpt.pt", [](const GPTImpl& m, const std::string& p) { save_checkpoint(p, m); }},
      {"model.ts", [](const GPTImpl& m, const std::string& p) { export_torchscript(m, p); }},
      {"model.safetensors", [](const GPTImpl& m, const std::string& p) { save_safetensors(p, m); }},
      {"model.bin", [](const GPTImpl& m, const std::string& p) { save_llmc(p, m); }},
      {"model_bf16.bin",
       [](const GPTImpl& m, const std::string& p) { save_llmc(p, m, LlmcDtype::kBFloat16); }},
  };
  for (const auto& [name, write] : writers) {
    write(*cpu, dir / ("cpu_" + name));
    write(*gpu, dir / ("gpu_" + name));
    EXPECT_EQ(testing::read_file(dir / ("gpu_" + name)), testing::read_file(dir / ("cpu_" + name)))
        << name;
  }
  EXPECT_TRUE(gpu->lm_head->weight.is_cuda()) << "writing moved the model";
}

// Decoding with the weights cast to bfloat16 and float16 on the GPU (the
// commands' --dtype): the tie and the cast hold, greedy text comes out,
// and the loss (scored in float32) is within 1% of float32's: bfloat16's
// 8-bit mantissa rounds each value by at most 0.4%, and at init's std
// 0.02 the logits are small, so the loss (about ln 96) moves far less.
TEST(Cuda, HalfPrecisionDecodingAgreesWithFloat32) {
  NEED_CUDA();
  GPT reference = on(small_model(), kCuda);
  torch::manual_seed(4);
  const auto x = torch::randint(96, {2, 64}).to(kCuda);
  const double want = reference(x, x).loss.item<double>();
  for (const torch::ScalarType dtype : {torch::kBFloat16, torch::kHalf}) {
    GPT model = on(small_model(), kCuda);
    model->to(kCuda, dtype);
    EXPECT_EQ(model->lm_head->weight.scalar_type(), dtype);
    EXPECT_EQ(model->lm_head->weight.data_ptr(), model->transformer->wte->weight.data_ptr());
    const GPTOutput out = model(x, x);
    EXPECT_EQ(out.logits.scalar_type(), dtype);
    EXPECT_EQ(out.loss.scalar_type(), torch::kFloat);
    EXPECT_NEAR(out.loss.item<double>(), want, 0.01 * want) << c10::toString(dtype);
    const auto text = generate(*model, {{5, 17, 42}},
                               SamplingOptions().temperature(0).max_new_tokens(29));
    ASSERT_EQ(text.size(), 1u);
    EXPECT_EQ(text[0].size(), 32u) << c10::toString(dtype);
  }
}

// A Trainer's checkpoint from the GPU (dropout's CUDA generator state in
// it) resumes on the GPU with the same next step, and on the CPU.
TEST(Cuda, TrainerCheckpointsResumeOnEitherDevice) {
  NEED_CUDA();
  testing::TempDir dir;
  std::ofstream(dir / "text.txt") << std::string(4000, 'a') + std::string(4000, 'b');
  prepare_dataset({dir / "text.txt"}, dir / "data", "char", 0.25);
  const auto options = TrainOptions().batch_size(4).grad_accum(1).max_steps(8).warmup_steps(1)
                           .eval_steps(2).seed(4);
  auto model = [] {
    return GPT(testing::tiny_config().vocab_size(2).dropout(0.1).init(InitOptions().seed(6)));
  };
  GPT first = model();
  first->to(kCuda);
  Trainer a(first, options, dir / "data");
  for (int i = 0; i < 2; ++i) a.step();
  a.save(dir / "ckpt.pt");
  const double next = a.step().loss;
  for (const torch::Device device : {kCuda, torch::Device(torch::kCPU)}) {
    Checkpoint c = load_checkpoint(dir / "ckpt.pt");
    c.model->to(device);
    Trainer b(c.model, options, dir / "data");
    b.restore(c, dir / "ckpt.pt");
    EXPECT_EQ(b.steps_done(), 2);
    const double again = b.step().loss;
    if (device.is_cuda()) {
      EXPECT_NEAR(again, next, 1e-4 * std::abs(next)) << "resumed on the GPU";
    }
    EXPECT_TRUE(std::isfinite(again));
  }
}

TEST(Cuda, GreedyGenerationEqualsTheCpus) {
  NEED_CUDA();
  GPT cpu = small_model(0.2), gpu = on(cpu, kCuda);  // a wide init: no near ties
  const std::vector<int64_t> prompt = {5, 17, 42};
  const auto options = SamplingOptions().temperature(0).max_new_tokens(61);  // 64 in all
  EXPECT_EQ(generate(*gpu, {prompt}, options), generate(*cpu, {prompt}, options));
}

// nanoGPT's bfloat16 run against its float32 run: the same steps on the
// shipped corpus reach a val loss within 2%.
TEST(Cuda, Bfloat16TrainingReachesFloat32sLoss) {
  NEED_CUDA();
  testing::TempDir dir;
  prepare_dataset({GPT2_SHAKESPEARE}, dir / "data", "char", 0.1);
  const int64_t vocab = read_dataset_meta(dir / "data").vocab_size;
  double val[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    GPT model(GPTConfig().block_size(128).vocab_size(vocab).n_layer(4).n_head(4).n_embd(128)
                  .dropout(0).init(InitOptions().seed(5)));
    model->to(kCuda);
    Trainer t(model, TrainOptions().batch_size(32).grad_accum(1).max_steps(300).warmup_steps(30)
                         .lr(1e-3).min_lr(1e-4).eval_steps(20).seed(9), dir / "data");
    t.set_precision(i == 0 ? torch::kFloat : torch::kBFloat16);
    for (int step = 0; step < 300; ++step) ASSERT_FALSE(t.step().skipped);
    val[i] = t.evaluate("val");
  }
  EXPECT_LT(val[0], 2.6);  // it learned: a uniform guess over 65 chars is 4.17
  EXPECT_LT(std::abs(val[1] - val[0]) / val[0], 0.02) << "float32 " << val[0] << ", bfloat16 " << val[1];
}

}  // namespace
}  // namespace gpt2
