#include "apps/gpt2/train/run_config.h"

#include <fmt/format.h>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"

namespace gpt2::app {
namespace {

// Step 3's rule: the model's vocabulary holds every id of the data.
void check_vocabulary(int64_t vocab_size, const std::string& what, const DatasetMeta& data,
                      const std::string& data_dir) {
  if (vocab_size < data.vocab_size) {
    throw ConfigError(fmt::format("{} {} is smaller than the data's {} ids ({})", what, vocab_size,
                                  data.vocab_size, data_dir));
  }
}

// Step 4's rule: the flags given describe the checkpoint's model.
void check_model_flags(const TrainPreset& preset, const ModelFlags& flags, const SavedRun& saved) {
  const auto refuse = [&saved](const std::string& given, const FieldDifference& d) {
    throw ConfigError(fmt::format("{} differs from the checkpoint's {} {} ({}); a resumed run keeps "
                                  "its model", given, d.field.key, d.second, saved.path));
  };
  for (const FieldFlags::Given& g : flags.fields.given) {
    GPTConfig flagged = saved.model;
    set_field(flagged, g.key, g.text, g.flag);
    for (const auto& d : field_differences(flagged, saved.model)) refuse(FieldFlags::spelled(g), d);
  }
  if (!flags.preset_given) return;
  for (const auto& d : field_differences(preset.model, saved.model)) {
    // The data decides the vocabulary (step 3); a flag given was checked above.
    if (!d.field.architecture || d.field.key == std::string("vocab_size") ||
        flags.has(d.field.key)) {
      continue;
    }
    refuse(fmt::format("--preset {} (its {} {})", flags.preset, d.field.key, d.first), d);
  }
}

// Step 5's rules: the file decides the model; the flags may crop it, set
// its dropout and seed the run (`*seed` becomes --seed, or 1337, unless
// --seed none).
GPTConfig pretrained_config(const ModelFlags& flags, const Pretrained& from, uint64_t* seed) {
  for (const FieldFlags::Given& g : flags.fields.given) {
    GPTConfig flagged = from.model;
    set_field(flagged, g.key, g.text, g.flag);
    for (const auto& d : field_differences(flagged, from.model)) {
      const std::string key = d.field.key;
      if (key == "dropout" || key == "init_seed") continue;
      if (key == "block_size" && flagged.block_size() < from.model.block_size()) continue;
      throw ConfigError(fmt::format(
          "{} differs from {}'s {} {}; {}", FieldFlags::spelled(g), from.path, key, d.second,
          key == "block_size" ? "its wpe has that many rows: a model can be cropped, not stretched"
                              : "--init-from takes the model from the file (--block-size may "
                                "crop it, --dropout and --seed may be set)"));
    }
  }
  GPTConfig config = flags.config_from(from.model);  // init seed 1337 unless --seed
  *seed = config.init().seed().value_or(*seed);
  config.init().seed(from.model.init().seed());  // the file's weights came from its own
  return config;
}

void check_pretrained_vocabulary(const Pretrained& from, const DatasetMeta& data,
                                 const std::string& data_dir) {
  check_data_for_model(data, data_dir, from.model.vocab_size(), from.path);
}

}  // namespace

RunConfig resolve_run_config(const TrainPreset& preset, const ModelFlags& model_flags,
                             const FieldFlags& train_flags, const DatasetMeta& data,
                             const std::string& data_dir, const SavedRun* saved,
                             const Pretrained* pretrained) {
  RunConfig run{preset.model, preset.train};
  if (saved && pretrained) throw ConfigError("--init-from and --resume exclude each other");
  if (preset.from_model_file && !pretrained) {
    throw ConfigError(fmt::format("the {} preset is a recipe for a model read from a file: give "
                                  "--init-from MODEL", model_flags.preset));
  }
  if (pretrained) {
    uint64_t seed = run.train.seed();
    run.model = pretrained_config(model_flags, *pretrained, &seed);
    run.train.seed(seed);
    check_pretrained_vocabulary(*pretrained, data, data_dir);
  } else if (saved) {
    check_model_flags(preset, model_flags, *saved);
    run = {saved->model, saved->train};
    check_vocabulary(run.model.vocab_size(),
                     fmt::format("the checkpoint's vocab_size ({})", saved->path), data, data_dir);
  } else {
    run.model = model_flags.config_from(run.model);
    run.train.seed(run.model.init().seed().value_or(run.train.seed()));
    if (!model_flags.has("vocab_size")) run.model.vocab_size(data.vocab_size);
    check_vocabulary(run.model.vocab_size(), "--vocab-size", data, data_dir);
    run.model.validate();
  }
  train_flags.apply_to(run.train);
  run.train.validate();
  return run;
}

void check_steps_left(const std::string& checkpoint, int64_t at, const TrainOptions& recipe) {
  if (at < recipe.max_steps()) return;
  throw ConfigError(fmt::format("'{}' is already at step {}, {} --max-steps {}: nothing to train "
                                "(give a larger --max-steps to go on)", checkpoint, at,
                                at == recipe.max_steps() ? "the last of" : "past",
                                recipe.max_steps()));
}

}  // namespace gpt2::app
