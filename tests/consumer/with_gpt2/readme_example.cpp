// The README's C++ examples, verbatim up to indentation: the test
// readme.cpp_examples_are_built_by_the_consumer checks that every ```cpp
// block of README.md is in this folder, and the consumer tests compile this
// file, so the examples cannot rot. Built, not run (it makes the 124M model).
#include <iostream>

#include "gpt2/gpt2.h"

int main() {
  gpt2::configure_runtime();  // every usable core, freed memory kept: as gpt2 train runs
  gpt2::GPT model(gpt2::GPTConfig::preset("gpt2"));
  TORCH_CHECK(model->lm_head->weight.data_ptr() == model->transformer->wte->weight.data_ptr());
  auto logits = model(torch::randint(50257, {1, 8})).logits;  // (1, 8, 50257)
  gpt2::export_torchscript(*model, "gpt2.ts");                // runnable without gpt2
}

[[maybe_unused]] static void more_of_the_api() {
  gpt2::GPT model(gpt2::GPTConfig::preset("gpt2").init(gpt2::InitOptions().seed(1337)));
  // One tensor under two names:
  TORCH_CHECK(model->lm_head->weight.data_ptr() == model->transformer->wte->weight.data_ptr());

  auto idx = torch::randint(50257, {4, 64});                  // (B, T) int64
  auto out = model(idx, /*targets=*/idx);                     // logits (B, T, V), loss
  auto next = model->forward_last(idx);                       // (B, V), head on the last position only
  auto loss = model->loss(idx, /*targets=*/idx);              // out.loss without the logits (training)

  auto opt = gpt2::configure_optimizers(*model,               // decay on matrices only,
      torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(0.1));  // tied matrix once
  opt->zero_grad();                                           // drops the gradients, as PyTorch 2's
  out.loss.backward();
  opt->step();

  gpt2::save_checkpoint("ckpt.pt", *model, {/*step=*/100, opt.get(), torch::Tensor()});
  gpt2::Checkpoint c = gpt2::load_checkpoint("ckpt.pt");      // model rebuilt from the file's config
  gpt2::load_weights("ckpt.pt", *model);                      // into an existing model
  gpt2::load_optimizer_state("ckpt.pt", *opt);
}

[[maybe_unused]] static void on_a_gpu(gpt2::GPT model, torch::Tensor idx) {
  model->to(torch::kCUDA);                                     // one tensor still: equal data_ptr()
  auto opt = gpt2::configure_optimizers(*model, torch::optim::AdamWOptions(6e-4));  // fused AdamW there
  gpt2::GPTOutput out;
  {
    gpt2::ops::Autocast bf16(torch::kCUDA, torch::kBFloat16);  // torch.autocast("cuda", torch.bfloat16)
    out = model(idx.to(torch::kCUDA), idx.to(torch::kCUDA));
  }
  out.loss.backward();                                         // weights, gradients, AdamW in float32
  opt->step();
}

[[maybe_unused]] static void text_in_text_out(gpt2::GPT model, std::vector<int64_t> prompt_ids) {
  const gpt2::Tokenizer tok = gpt2::Tokenizer::gpt2();      // shipped files, sha256-checked
  std::vector<int32_t> ids = tok.encode("hello world");      // {31373, 995}
  std::string text = tok.decode(ids);                        // bytes; round-trips any bytes

  auto out = gpt2::generate(*model, {prompt_ids}, gpt2::SamplingOptions()
      .max_new_tokens(100).temperature(0.8).top_k(200).stop_token(50256),
      [&](size_t row, int64_t token) { std::cout << tok.decode_token(token); });
}

// docs/init.md: the init audit from C++.
[[maybe_unused]] static void audit_the_init(gpt2::GPT model) {
  const gpt2::InitAudit audit = gpt2::audit_init(*model);  // GPT-2's rule: 2n
  if (!audit.ok()) for (const auto& finding : audit.findings) std::cerr << finding << "\n";
}
