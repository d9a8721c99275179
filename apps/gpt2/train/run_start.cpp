#include "apps/gpt2/train/run_start.h"

#include <fmt/format.h>

#include "gpt2/runtime/device_line.h"
#include "gpt2/runtime/runtime.h"

namespace gpt2::app {

void print_run_start(std::FILE* out, const Trainer& t, const RunStart& s) {
  const TrainOptions& o = t.options();
  const GPTConfig& config = t.model->config;
  for (const auto& note : s.notes) fmt::print(out, "note      {}\n", note);
  if (s.pretrained) {
    const int64_t had = s.pretrained->model.block_size();
    fmt::print(out, "init-from {} ({}): {}{}\n", s.pretrained->path, to_string(s.format),
               to_string(s.pretrained->model),
               had > config.block_size()
                   ? fmt::format("; block_size cropped {} -> {}", had, config.block_size())
                   : "");
  }
  fmt::print(out, "config    {}\n", to_string(config));
  fmt::print(out, "training  {}\n", to_string(o));
  fmt::print(out, "data      {} ({}): train {} tokens, val {}\n", t.data_dir(),
             describe_dataset(s.meta), s.meta.train_tokens, s.meta.val_tokens);
  const int64_t tokens = o.tokens_per_step(config.block_size());
  fmt::print(out, "model     {} parameters (tied matrix once); {} tokens per step{}\n",
             t.model->num_parameters(), s.world * tokens,
             s.world > 1 ? fmt::format(" ({} per rank)", tokens) : "");
  fmt::print(out, "runtime   {}\n", runtime_line(runtime_info()));
  if (s.device.is_cuda()) {
    const torch::ScalarType dtype = s.dtype == "float32" ? torch::kFloat : torch::kBFloat16;
    const std::string precision = s.dtype == "float32"
                                      ? "throughout"
                                      : "autocast (weights, gradients, AdamW in float32)";
    fmt::print(out, "device    {}\n", device_line(s.device, dtype, precision, config,
                                                   o.batch_size(), config.block_size()));
  } else if (s.dtype != "float32") {
    fmt::print(out, "device    {}, {} autocast (weights, gradients, AdamW in float32)\n",
               s.device.str(), s.dtype);
  }
  fmt::print(out, "run       steps {} to {}; checkpoint {}, log {}\n", t.steps_done() + 1,
             o.max_steps(), s.checkpoint, s.log);
  std::fflush(stdout);
}

}  // namespace gpt2::app
