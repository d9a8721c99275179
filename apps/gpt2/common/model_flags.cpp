#include "apps/gpt2/common/model_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <ostream>
#include <set>

#include "gpt2/fields/table.h"
#include "gpt2/generate/weight_format.h"
#include "gpt2/io/model_source.h"

namespace gpt2::app {
namespace {

// The command's seed when none is given, so that a run is repeatable.
constexpr uint64_t kDefaultSeed = 1337;

}  // namespace

std::vector<CLI::Option*> ModelFlags::add_to(CLI::App& app, const std::vector<std::string>& skip) {
  std::vector<CLI::Option*> added;
  added.push_back(app.add_option("--preset", preset, "Model sizes to start from")
                      ->check(CLI::IsMember(preset_choices))
                      ->each([this](const std::string&) { preset_given = true; })
                      ->capture_default_str());
  std::vector<GPTConfig> presets;
  for (const auto& name : preset_choices) {
    presets.push_back(preset_config(name));
    presets.back().init().seed(kDefaultSeed);
  }
  for (CLI::Option* option : add_field_flags(app, flag_specs(presets), fields, skip, default_notes)) {
    added.push_back(option);
  }
  return added;
}

ModelFlags& ModelFlags::set(const std::string& key, const std::string& text) {
  const auto field = find_field(GPTConfig(), key);
  fields.set(key, text, field && field->flag ? fmt::format("--{}", field->flag) : key);
  return *this;
}

GPTConfig ModelFlags::config() const { return config_from(preset_config(preset)); }

GPTConfig ModelFlags::config_from(GPTConfig base) const {
  GPTConfig c = std::move(base);
  c.init().seed(kDefaultSeed);
  fields.apply_to(c);
  c.validate();
  check_fits_in_memory(c);  // a size typo fails here, not when memory runs out
  return c;
}

GPT model_from(const std::string& path, const ModelFlags& flags, std::ostream& notes,
               Mmap mmap) {
  if (path.empty()) return GPT(flags.config());
  LoadedModel loaded = load_model_file(path, ModelSourceOptions().mmap(mmap));
  for (const auto& note : loaded.notes) fmt::print(notes, "note      {}\n", note);
  return loaded.model;
}

CLI::Option* add_mmap_flag(CLI::App& cmd, std::string& mmap) {
  return cmd
      .add_option("--mmap", mmap,
                  "Leave the weights in the model file's pages (copy-on-write) instead of "
                  "copying them: on; off; auto: where the kernel maps the file in 2 MiB pages. "
                  "Mapped, the file must not be truncated or rewritten in place meanwhile "
                  "(docs/speed.md)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
}

CLI::Option* add_weights_flag(CLI::App& cmd, std::string& weights) {
  return cmd.add_option("--weights", weights,
                        "Read the Linear weights as fp32, bf16 or int8 (one scale per output row) "
                        "when decoding: fewer bytes per token, slightly different numbers "
                        "(docs/speed.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}))
      ->capture_default_str();
}

void apply_weights(GPTImpl& model, const std::string& weights, std::ostream& out) {
  const WeightFormat format = weight_format_from_string(weights);
  const int64_t fp32 = decode_weight_bytes(model);
  set_weight_format(model, format);
  if (format == WeightFormat::kFloat32) return;
  int64_t copies = 0;  // the packed copies, the tied matrix's once
  std::set<const void*> seen;
  for (const auto& module : model.modules(/*include_self=*/false)) {
    if (const auto* linear = module->as<LinearImpl>()) {
      if (seen.insert(linear->weight.data_ptr()).second) copies += linear->weight_bytes();
    }
  }
  const int64_t held = static_cast<int64_t>(model.num_parameters()) * 4 + copies;
  fmt::print(out, "weights   {}: {:.0f} MB read per token (fp32: {:.0f} MB); {:.0f} MB held (the "
                  "fp32 weights stay, for the embedding and for training)\n",
             weights, decode_weight_bytes(model) / 1e6, fp32 / 1e6, held / 1e6);
}

}  // namespace gpt2::app
