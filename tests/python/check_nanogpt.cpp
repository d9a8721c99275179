// The C++ side of tests/python/nanogpt_ckpt.py: reads the nanoGPT
// checkpoints Python wrote, compares logits, resumes one train.py step and
// compares the loss, and writes the checkpoint Python then resumes from.
//   check_nanogpt FOLDER
// Exit 0 when every check holds. Both sides compute in float32 from the
// same weights in different op orders (fused vs unfused attention, the
// library's AdamW pass vs torch's), so logits and losses differ by a few
// ulps of values near 1 to 5, about 1e-7 to 1e-6: 1e-5 is ten times that.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "gpt2/error.h"
#include "gpt2/io/model_source.h"
#include "gpt2/io/nanogpt.h"
#include "gpt2/io/safetensors.h"
#include "gpt2/train/optim.h"
#include "gpt2/train/train_options.h"

namespace {

double number(const gpt2::StoredFields& config, const char* key) {
  for (const auto& [k, v] : config) {
    if (k != key) continue;
    if (std::holds_alternative<double>(v)) return std::get<double>(v);
    if (std::holds_alternative<int64_t>(v)) return static_cast<double>(std::get<int64_t>(v));
  }
  throw std::runtime_error(fmt::format("config has no number {}", key));
}

bool near(const char* what, double got, double want, double bound = 1e-5) {
  const bool ok = std::abs(got - want) < bound;
  fmt::print("check_nanogpt: {}: {:.7g}, want {:.7g}, |diff| {:.3g} (bound {}) {}\n", what, got,
             want, std::abs(got - want), bound, ok ? "ok" : "FAIL");
  return ok;
}

// Whether reading `path` throws an E whose message holds `words`.
template <class E>
bool refuses(const std::string& path, const std::string& words) {
  std::string got = "nothing thrown";
  bool ok = false;
  try {
    gpt2::load_model_file(path);
  } catch (const E& e) {
    got = e.what();
    ok = got.find(words) != std::string::npos;
  } catch (const std::exception& e) {
    got = std::string("another type: ") + e.what();
  }
  fmt::print("check_nanogpt: {} refused ({}): {}\n  {}\n", path, words, ok ? "ok" : "FAIL", got);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: check_nanogpt FOLDER\n");
    return 2;
  }
  const std::string dir = argv[1];
  const auto expected = gpt2::read_safetensors(dir + "/expected.safetensors");
  std::map<std::string, torch::Tensor> e(expected.tensors.begin(), expected.tensors.end());
  bool ok = true;
  torch::NoGradGuard no_grad;
  for (const char* name : {"ckpt.pt", "ckpt_compiled.pt", "ckpt_mask.pt"}) {
    auto loaded = gpt2::load_model_file(dir + "/" + name);
    ok &= loaded.format == gpt2::ModelFormat::kNanoGPT;
    loaded.model->eval();
    const auto logits = loaded.model(e.at("tokens").to(torch::kLong)).logits;
    ok &= near(fmt::format("{} max |logit - Python's|", name).c_str(),
               (logits - e.at("logits")).abs().max().item<double>(), 0);
  }
  // Hostile files: typed errors, and nothing they name runs.
  ok &=
      refuses<gpt2::FormatError>(dir + "/hostile_reduce.pt", "global posix.system is not allowed");
  ok &= !std::filesystem::exists(dir + "/pwned");
  ok &=
      refuses<gpt2::FormatError>(dir + "/hostile_global.pt", "global datetime.date is not allowed");
  ok &= refuses<gpt2::FormatError>(dir + "/hostile_truncated.pt", "hostile_truncated.pt");
  ok &= refuses<gpt2::CheckpointError>(dir + "/hostile_missing.pt", "not a nanoGPT checkpoint");
  ok &= refuses<gpt2::CheckpointError>(dir + "/hostile_shape.pt",
                                       "size mismatch for transformer.wte.weight");
  // A mistyped field is the one problem: the shapes are not held against
  // the default it leaves in the config.
  ok &= refuses<gpt2::CheckpointError>(dir + "/hostile_mistyped.pt",
                                       "(1 problem):\n  model_args['n_embd'] is str, expected int");
  // Resume: weights and AdamW state, then one train.py step on (x, y).
  auto c = gpt2::load_nanogpt(dir + "/ckpt.pt", gpt2::NanoGPTReadOptions().optimizer(true));
  auto& model = *c.model;
  auto opt = gpt2::configure_optimizers(model, torch::optim::AdamWOptions(1.0));
  gpt2::restore_nanogpt_optimizer(*c.optimizer, model, *opt, "ckpt.pt");
  gpt2::save_nanogpt(dir + "/from_cpp.pt", model, c.run, opt.get());  // Python resumes this
  const auto tokens = e.at("tokens").to(torch::kLong);
  const auto logits_saved = model.forward(tokens).logits;
  const auto& cfg = c.run.config;
  const auto schedule = gpt2::LrSchedule()
                            .lr(number(cfg, "learning_rate"))
                            .min_lr(number(cfg, "min_lr"))
                            .warmup_steps(static_cast<int64_t>(number(cfg, "warmup_iters")))
                            .decay_steps(static_cast<int64_t>(number(cfg, "lr_decay_iters")));
  const auto x = e.at("x").to(torch::kLong), y = e.at("y").to(torch::kLong);
  ok &= near("loss at resume (Python's)", model.forward(x, y).loss.item<double>(),
             e.at("loss_before").item<double>());
  {
    torch::AutoGradMode grad(true);
    for (auto& group : opt->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(schedule.at(c.run.iter_num));
    }
    model.forward(x, y).loss.backward();
    opt->clip_grad_norm(model.unique_parameters(), number(cfg, "grad_clip"));
    opt->step();
  }
  ok &= near("loss after the resumed step (Python's)", model.forward(x, y).loss.item<double>(),
             e.at("loss_after").item<double>());
  // The library's own file reads back to the same model, bit for bit.
  auto back = gpt2::load_model(dir + "/from_cpp.pt");
  ok &= near("from_cpp.pt max |logit - the saved model's|",
             (back(tokens).logits - logits_saved).abs().max().item<double>(), 0, 1e-30);
  return ok ? 0 : 1;
}
