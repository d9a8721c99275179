#include "apps/gpt2/model_flags.h"

#include <CLI/CLI.hpp>

namespace gpt2::app {

std::vector<CLI::Option*> ModelFlags::add_to(CLI::App& app) {
  std::vector<CLI::Option*> added;
  added.push_back(app.add_option("--preset", preset, "Model sizes to start from")
                      ->check(CLI::IsMember(GPTConfig::preset_names()))
                      ->capture_default_str());
  added.push_back(app.add_option("--n-layer", n_layer, "Override: number of blocks")
                      ->check(CLI::PositiveNumber));
  added.push_back(
      app.add_option("--n-head", n_head, "Override: attention heads")->check(CLI::PositiveNumber));
  added.push_back(
      app.add_option("--n-embd", n_embd, "Override: residual width")->check(CLI::PositiveNumber));
  added.push_back(app.add_option("--block-size", block_size, "Override: longest sequence")
                      ->check(CLI::PositiveNumber));
  added.push_back(app.add_option("--vocab-size", vocab_size, "Override: vocabulary size")
                      ->check(CLI::PositiveNumber));
  added.push_back(app.add_option("--dropout", dropout, "Override: dropout probability in [0, 1)"));
  added.push_back(app.add_option("--gelu", gelu, "GELU variant")
                      ->check(CLI::IsMember({"tanh", "exact"}))
                      ->capture_default_str());
  added.push_back(app.add_flag("--no-bias", no_bias, "No biases in Linear and LayerNorm"));
  added.push_back(
      app.add_option("--seed", seed, "Seed of the init's generator")->capture_default_str());
  added.push_back(
      app.add_option("--init-scheme", init_scheme,
                     "Residual scale: 2n = std/sqrt(2*n_layer) (GPT-2), n = std/sqrt(n_layer), "
                     "none")
          ->check(CLI::IsMember({"2n", "n", "none"}))
          ->capture_default_str());
  added.push_back(
      app.add_option("--wpe-std", wpe_std, "std of wpe: 0.02 (nanoGPT) or 0.01 (OpenAI's TF code)")
          ->check(CLI::PositiveNumber)
          ->capture_default_str());
  return added;
}

GPTConfig ModelFlags::config() const {
  GPTConfig c = GPTConfig::preset(preset);
  if (n_layer) c.n_layer(*n_layer);
  if (n_head) c.n_head(*n_head);
  if (n_embd) c.n_embd(*n_embd);
  if (block_size) c.block_size(*block_size);
  if (vocab_size) c.vocab_size(*vocab_size);
  if (dropout) c.dropout(*dropout);
  c.gelu(gelu_from_string(gelu));
  c.bias(!no_bias);
  c.init(
      InitOptions().seed(seed).residual(residual_scale_from_string(init_scheme)).wpe_std(wpe_std));
  c.validate();
  return c;
}

}  // namespace gpt2::app
