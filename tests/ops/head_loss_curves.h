#pragma once
// Two training runs of one model from one seed, the same batches and AdamW,
// one through GPTImpl::loss (the fused head where it applies), the other
// through nanoGPT's forward(x, y).loss: shared by the CPU suite (bfloat16
// autocast on the CPU) and the CUDA one (tests/gpu/head_loss_test.cpp).

#include <gtest/gtest.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpt2/model/gpt.h"
#include "gpt2/ops/ops.h"

namespace gpt2::testing {

/// A batch a model learns in a few steps: row r counts up from r by 2r + 1,
/// modulo `vocab`, every step the same, so the loss falls as it trains.
inline std::pair<torch::Tensor, torch::Tensor> counting_batch(int64_t B, int64_t T,
                                                              int64_t vocab) {
  auto rows = torch::arange(B, torch::kLong).unsqueeze(1);            // (B, 1)
  auto cols = torch::arange(T + 1, torch::kLong).unsqueeze(0);        // (1, T + 1)
  auto seq = (rows * 2 + 1) * cols + rows;                            // (B, T + 1)
  seq = seq.remainder(vocab);
  return {seq.narrow(1, 0, T).contiguous(), seq.narrow(1, 1, T).contiguous()};
}

/// The losses of `steps` AdamW steps (lr 3e-3, the gradient clipped to 1)
/// of a model made from `config` with seed 0, on `device` under autocast to
/// `dtype`; `make_logits` as bench::time_steps.
inline std::vector<double> loss_curve(const GPTConfig& config, const torch::Device& device,
                                      torch::ScalarType dtype, int64_t steps, int64_t B,
                                      bool make_logits) {
  torch::manual_seed(0);
  GPT model(config);
  model->to(device);
  model->train();
  torch::optim::AdamW opt(model->unique_parameters(), torch::optim::AdamWOptions(3e-3));
  std::vector<double> losses;
  for (int64_t s = 0; s < steps; ++s) {
    auto [x, y] = counting_batch(B, config.block_size(), config.vocab_size());
    x = x.to(device);
    y = y.to(device);
    opt.zero_grad();
    torch::Tensor loss;
    {
      ops::Autocast autocast(device, dtype);
      loss = make_logits ? model->forward(x, y).loss : model->loss(x, y);
    }
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->unique_parameters(), 1.0);
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

/// Holds two loss curves of the same run in bfloat16 to agree: each mean
/// over 20 steps within 5% (plus 0.01), each step within 10% (plus 0.05).
/// Rounding moves where a fast fall happens by a step or so, which a
/// step's loss feels far more than a window's.
inline void expect_curves_agree(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    EXPECT_NEAR(got[s], want[s], 0.10 * want[s] + 0.05) << "step " << s;
  }
  for (size_t s = 0; s < got.size(); s += 20) {
    double a = 0, b = 0;
    const size_t end = std::min(got.size(), s + 20);
    for (size_t i = s; i < end; ++i) {
      a += got[i] / static_cast<double>(end - s);
      b += want[i] / static_cast<double>(end - s);
    }
    EXPECT_NEAR(a, b, 0.05 * b + 0.01) << "steps " << s << " to " << end - 1;
  }
}

}  // namespace gpt2::testing
