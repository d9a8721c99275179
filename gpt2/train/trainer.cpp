#include "gpt2/train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/fields/table.h"
#include "gpt2/ops/ops.h"
#include "gpt2/train/data/data_folder.h"

namespace gpt2 {
namespace {

// Seeds of the evaluation loaders, apart from the training stream's.
constexpr uint64_t kEvalTrainSeedOffset = 1;
constexpr uint64_t kEvalValSeedOffset = 2;

// Dropout's seed on `rank` after `step` steps: the run's seed on rank 0 (so
// a one-process run is unchanged), apart on the others. A checkpoint holds
// rank 0's generator; the other ranks reseed from this at a resume.
uint64_t dropout_seed(uint64_t seed, int64_t rank, int64_t step) {
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  return seed + static_cast<uint64_t>(rank) * (1 + static_cast<uint64_t>(step) * kGolden);
}

// Dropout draws from the default generator of the device the model is on.
at::Generator dropout_generator(const torch::Device& device) {
  return device.is_cpu() ? at::detail::getDefaultCPUGenerator()
                         : at::globalContext().defaultGenerator(device);
}

void seed_generator(at::Generator gen, uint64_t seed) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
}

torch::Tensor generator_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

// Bytes of a CUDA generator's state (seed and offset): a checkpoint written
// on a GPU and resumed on the CPU, or the other way round, holds these.
constexpr int64_t kCudaGeneratorBytes = 16;

}  // namespace

Trainer::Trainer(GPT model_, const TrainOptions& options, const std::string& data_dir,
                 std::shared_ptr<DataParallel> data_parallel)
    : model(std::move(model_)),
      options_(options),
      data_dir_(data_dir),
      schedule_(options.schedule()),
      dp_(std::move(data_parallel)),
      device_(model->lm_head->weight.device()) {
  BatchSources sources = open_batch_sources(
      data_dir, options.batch_size(), model->config.block_size(), model->config.vocab_size(),
      options.seed(), options.seed() + kEvalTrainSeedOffset, options.seed() + kEvalValSeedOffset);
  train_ = std::move(sources.train);
  eval_train_ = std::move(sources.eval_train);
  eval_val_ = std::move(sources.eval_val);
  options_.validate();
  optimizer_ = configure_optimizers(*model, torch::optim::AdamWOptions(options.lr())
                                                .betas({options.beta1(), options.beta2()})
                                                .weight_decay(options.weight_decay()));
  params_ = model->unique_parameters();
  if (dp_) {
    // Ranks started with other models or recipes would fail inside Gloo
    // (shapes that differ) or train apart silently: compare first.
    dp_->check_same("model and recipe",
                    to_string(model->config) + "; " + to_string(options_));
    dp_->broadcast(params_);
  }
  seed_generator(dropout_generator(device_), dropout_seed(options.seed(), dp_ ? dp_->rank() : 0, 0));
}

void Trainer::set_precision(torch::ScalarType dtype) {
  ops::Autocast check(device_, dtype);  // throws for what autocast cannot do here
  precision_ = dtype;
}

StepResult Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  StepResult r;
  r.lr = schedule_.at(step_);
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(r.lr);
  }
  model->train();
  optimizer_->zero_grad();
  const int64_t rank = dp_ ? dp_->rank() : 0, world = dp_ ? dp_->world_size() : 1;
  train_->skip(rank * options_.grad_accum());  // the lower ranks' micro-batches
  std::vector<torch::Tensor> losses;  // read once, after the last backward
  for (int64_t micro = 0; micro < options_.grad_accum(); ++micro) {
    const Batch batch = train_->next();
    torch::Tensor loss;
    {
      ops::Autocast autocast(device_, precision_);  // forward and loss, as nanoGPT's ctx
      loss = model->loss(batch.x.to(device_), batch.y.to(device_));
    }
    loss = loss / options_.grad_accum();
    if (loss_hook) loss = loss_hook(step_, loss);
    loss.backward();
    losses.push_back(loss.detach());
  }
  // One read from the device for the step, so that micro-batches queue
  // without waiting; summed in double in order, as item() by item().
  const torch::Tensor host = torch::stack(losses).to(torch::kCPU, torch::kDouble);
  for (int64_t i = 0; i < host.size(0); ++i) r.loss += host[i].item<double>();
  train_->skip((world - 1 - rank) * options_.grad_accum());  // the higher ranks'
  if (dp_) r.loss = dp_->average_gradients(params_, r.loss);
  // As clip_grad_norm_, the scaling done inside the optimizer's step.
  r.grad_norm = optimizer_->clip_grad_norm(
      params_, options_.grad_clip() > 0 ? options_.grad_clip()
                                        : std::numeric_limits<double>::infinity());
  r.skipped = !std::isfinite(r.loss) || !std::isfinite(r.grad_norm);
  if (!r.skipped) optimizer_->step();
  r.step = ++step_;
  r.tokens = options_.tokens_per_step(model->config.block_size()) * world;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

double Trainer::evaluate(const std::string& split) {
  TORCH_CHECK(split == "train" || split == "val", "split must be train or val, got ", split);
  BatchSource& loader = split == "train" ? *eval_train_ : *eval_val_;
  loader.reseed(options_.seed() + (split == "train" ? kEvalTrainSeedOffset : kEvalValSeedOffset));
  torch::NoGradGuard no_grad;
  model->eval();
  double sum = 0;
  for (int64_t i = 0; i < options_.eval_steps(); ++i) {
    if (dp_ && i % dp_->world_size() != dp_->rank()) {  // another rank's batch
      loader.skip(1);
      continue;
    }
    const Batch batch = loader.next();
    ops::Autocast autocast(device_, precision_);
    sum += model->loss(batch.x.to(device_), batch.y.to(device_)).item<double>();
  }
  model->train();
  if (dp_) sum = dp_->sum(sum);
  return sum / static_cast<double>(options_.eval_steps());
}

bool Trainer::record_val(double loss) {
  if (!(loss < best_val_)) return false;
  best_val_ = loss;
  best_val_step_ = step_;
  return true;
}

void Trainer::save(const std::string& path) const {
  nlohmann::json record = {{"data_dir", data_dir_}, {"best_val_step", best_val_step_}};
  record["best_val_loss"] = best_val_step_ >= 0 ? nlohmann::json(best_val_) : nlohmann::json();
  const std::string position = train_->position();
  if (!position.empty()) record["data_position"] = nlohmann::json::parse(position);
  // Two generator states, the loader's then dropout's (the device's default).
  const torch::Tensor rng =
      torch::cat({train_->rng_state(), generator_state(dropout_generator(device_)).to(torch::kCPU)});
  save_checkpoint(path, *model,
                  {step_, optimizer_.get(), rng, record.dump(), stored_fields(options_)});
}

void Trainer::restore(const Checkpoint& checkpoint, const std::string& path) {
  const TrainRecord record = parse_train_record(checkpoint, path);
  const torch::Tensor rng = checkpoint.rng_state;
  const int64_t loader = train_->rng_state().numel();
  const int64_t here = generator_state(dropout_generator(device_)).numel();
  const int64_t cpu = generator_state(at::detail::getDefaultCPUGenerator()).numel();
  const int64_t dropout = rng.defined() ? rng.numel() - loader : -1;
  if (!rng.defined() || rng.scalar_type() != torch::kUInt8 || rng.dim() != 1 ||
      !(dropout == cpu || dropout == kCudaGeneratorBytes)) {
    throw CheckpointError(fmt::format("checkpoint '{}' holds no trainer generator states "
                                      "(expected {} uint8 values from a CPU run, {} from a CUDA "
                                      "run)", path, loader + cpu, loader + kCudaGeneratorBytes));
  }
  if (!checkpoint.has_optimizer_state) {
    throw CheckpointError(fmt::format("checkpoint '{}' holds no optimizer state", path));
  }
  load_optimizer_state(path, *optimizer_);
  train_->set_rng_state(rng.slice(0, 0, loader).clone());
  if (!record.data_position.empty() || !train_->position().empty()) {
    if (record.data_position.empty()) {
      throw CheckpointError(fmt::format("checkpoint '{}' holds no position in the token shards of "
                                        "'{}' (it was written for another data layout)", path, data_dir_));
    }
    try {
      train_->set_position(record.data_position);
    } catch (const InputError& e) {
      throw CheckpointError(fmt::format("checkpoint '{}': {}", path, e.what()));
    }
  }
  const int64_t rank = dp_ ? dp_->rank() : 0;
  if (dropout == here && rank == 0) {
    at::Generator gen = dropout_generator(device_);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng.slice(0, loader, loader + here).clone());
  } else {
    // The other ranks, and a run resumed on another kind of device, draw
    // dropout from a seed of the step.
    seed_generator(dropout_generator(device_), dropout_seed(options_.seed(), rank, checkpoint.step));
  }
  step_ = checkpoint.step;
  best_val_ = record.best_val_loss;
  best_val_step_ = record.best_val_step;
}

void Trainer::restore(const NanoGPTCheckpoint& checkpoint, const std::string& path) {
  if (!checkpoint.optimizer) {
    throw CheckpointError(fmt::format("nanoGPT checkpoint '{}' was read without its optimizer", path));
  }
  restore_nanogpt_optimizer(*checkpoint.optimizer, *model, *optimizer_, path);
  step_ = checkpoint.run.iter_num;
  seed_generator(dropout_generator(device_), dropout_seed(options_.seed(), dp_ ? dp_->rank() : 0, step_));
  // train.py's best_val_loss is 1e9 before any eval, else the one its save followed.
  best_val_step_ = checkpoint.run.best_val_loss < 1e9 ? step_ : -1;
  if (best_val_step_ >= 0) best_val_ = checkpoint.run.best_val_loss;
}

TrainRecord parse_train_record(const Checkpoint& checkpoint, const std::string& path) {
  TrainRecord r;
  try {
    const nlohmann::json json = nlohmann::json::parse(checkpoint.extra);
    if (!checkpoint.train_options.empty()) {
      load_fields(r.options, checkpoint.train_options);
    } else {
      // Checkpoints written before the options were typed attributes keep
      // them in `extra` as {"trainer_options": {key: text}}.
      for (const auto& [key, value] : json.at("trainer_options").items()) {
        set_field(r.options, key, value.get<std::string>(), key);
      }
    }
    r.data_dir = json.at("data_dir").get<std::string>();
    r.best_val_step = json.at("best_val_step").get<int64_t>();
    if (json.contains("data_position")) r.data_position = json["data_position"].dump();
    if (!json.at("best_val_loss").is_null()) r.best_val_loss = json["best_val_loss"].get<double>();
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("checkpoint '{}' has no usable training record (was it "
                                      "written by `gpt2 train`?): {}", path, e.what()));
  }
  return r;
}

}  // namespace gpt2
