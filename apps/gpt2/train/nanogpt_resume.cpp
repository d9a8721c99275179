#include "apps/gpt2/train/nanogpt_resume.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <variant>

#include "gpt2/error.h"
#include "gpt2/io/model_source.h"
#include "gpt2/train/nanogpt_run.h"

namespace gpt2::app {

std::optional<NanoGPTResume> read_nanogpt_resume(const std::string& ckpt,
                                                 const std::string& data_flag, std::FILE* out) {
  if (detect_model_format(ckpt) != ModelFormat::kNanoGPT) return std::nullopt;
  std::optional<NanoGPTResume> out_run(NanoGPTResume{
      load_nanogpt(ckpt, NanoGPTReadOptions().optimizer(true)), SavedRun(), data_flag});
  NanoGPTResume& r = *out_run;
  const StoredFields& config = r.checkpoint.run.config;
  r.saved.model = r.checkpoint.model->config;
  r.saved.train = recipe_from_nanogpt(config);
  r.saved.path = ckpt;
  if (r.data.empty()) {
    std::string dataset;
    for (const auto& [key, v] : config) {
      if (key == "dataset" && std::holds_alternative<std::string>(v))
        dataset = std::get<std::string>(v);
    }
    const std::string folder = "data/" + dataset;
    if (dataset.empty() || !std::filesystem::exists(folder + "/train.bin")) {
      throw ConfigError(
          fmt::format("nanoGPT run '{}' trained on dataset '{}', and {} holds no "
                      "train.bin here: give its token folder with --data",
                      ckpt, dataset, folder));
    }
    r.data = folder;
  }
  for (const auto& note : r.checkpoint.notes) fmt::print(out, "note      {}\n", note);
  fmt::print(out, "nanoGPT   {} at iter_num {}; recipe from its config: {}\n", ckpt,
             r.checkpoint.run.iter_num, fmt::join(nanogpt_recipe_lines(config), ", "));
  fmt::print(out,
             "nanoGPT   AdamW moments and steps matched by name onto the optimizer; nanoGPT's "
             "random batch order does not carry over (batches come from this run's seed)\n");
  fmt::print(out,
             "nanoGPT   the run writes gpt2 checkpoints to {}; hand one back with "
             "gpt2 convert {} ckpt.pt --to nanogpt\n",
             ckpt, ckpt);
  return out_run;
}

}  // namespace gpt2::app
