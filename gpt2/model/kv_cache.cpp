#include "gpt2/model/kv_cache.h"

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <algorithm>
#include <atomic>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

// The caller's mistakes, named as InputErrors.
template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (!ok) throw InputError(c10::str(parts...));
}

// A fresh name for a layout (KVCache::layout), unique in the process.
int64_t next_layout() {
  static std::atomic<int64_t> last{0};
  return ++last;
}

}  // namespace

KVCache::KVCache(const GPTConfig& config, int64_t batch, const torch::TensorOptions& options,
                 bool fixed_shapes)
    : capacity_(config.block_size()), batch_(batch), fixed_(fixed_shapes), layout_(next_layout()) {
  check(batch >= 1, "KVCache batch must be at least 1, got ", batch);
  const int64_t nh = config.n_head(), hs = config.n_embd() / config.n_head();
  // A fixed-shape step reads every slot, the unwritten ones masked: zeros,
  // as 0 * NaN would reach the output.
  const auto slots = [&] {
    return fixed_ ? torch::zeros({batch, nh, capacity_, hs}, options)
                  : torch::empty({batch, nh, capacity_, hs}, options);
  };
  try {
    for (int64_t i = 0; i < config.n_layer(); ++i) {
      keys_.push_back(slots());
      values_.push_back(slots());
    }
  } catch (const c10::Error&) {  // sizes that overflow, or memory that ran out
    const double bytes = 2.0 * config.n_layer() * batch * capacity_ * config.n_embd();
    check(false, "a KV cache of ", batch, " rows (", bytes * options.dtype().itemsize() / 1e9,
          " GB) cannot be allocated");
  }
  if (fixed_) {
    const auto longs = torch::TensorOptions(torch::kLong).device(options.device());
    step_length_ = torch::zeros({1}, longs);
    slots_ = torch::arange(capacity_, longs);
    set_step_pads();
  }
}

void KVCache::clear() {
  length_ = 0;
  padding_ = torch::Tensor();
  if (fixed_) set_step_pads();
}

void KVCache::set_step_pads() {
  step_pads_ = padding_.defined()
                   ? padding_.clone()
                   : torch::zeros({batch_}, torch::TensorOptions(torch::kLong).device(slots_.device()));
  layout_ = next_layout();
}

void KVCache::sync_step() {
  check(fixed_, "KVCache::sync_step needs a cache made with fixed_shapes");
  check(length_ < capacity_, "KVCache holds ", capacity_, " positions, all filled: no room for "
        "a step");
  step_length_.fill_(length_);
}

KVCache::Step::Step(KVCache& cache) : cache_(cache) {
  check(cache.fixed_, "a fixed-shape step needs a KV cache made with fixed_shapes");
  cache.stepping_ = true;
}

torch::Tensor KVCache::step_positions() const {
  check(fixed_, "KVCache::step_positions needs a cache made with fixed_shapes");
  return (step_length_ - step_pads_).clamp_min(0).unsqueeze(1);  // (B, 1)
}

torch::Tensor KVCache::step_mask() const {
  check(fixed_, "KVCache::step_mask needs a cache made with fixed_shapes");
  const auto slot = slots_.view({1, capacity_});
  const auto after = slot.gt(step_length_.view({1, 1}));      // (1, S)
  const auto padded = slot.lt(step_pads_.view({batch_, 1}));  // (B, S)
  return (after | padded).view({batch_, 1, 1, capacity_});    // (B, 1, 1, S)
}

std::pair<torch::Tensor, torch::Tensor> KVCache::append_step(size_t layer, const torch::Tensor& k,
                                                             const torch::Tensor& v) {
  check(k.size(2) == 1, "a fixed-shape step writes one position, got ", k.size(2));
  keys_[layer].index_copy_(2, step_length_, k);
  values_[layer].index_copy_(2, step_length_, v);
  return {keys_[layer], values_[layer]};
}

std::pair<torch::Tensor, torch::Tensor> KVCache::append(size_t layer, const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  check(layer < keys_.size(), "KVCache has ", keys_.size(), " layers, asked for ", layer);
  const torch::Tensor& mine = keys_[layer];
  check(k.size(1) == mine.size(1) && k.size(3) == mine.size(3) && k.dtype() == mine.dtype() &&
            k.device() == mine.device(), "the KV cache holds ", mine.size(1), " heads of ",
        mine.size(3), " ", mine.dtype(), " on ", mine.device(), "; the model gives ", k.size(1),
        " of ", k.size(3), " ", k.dtype(), " on ", k.device(), ": make it with the model's config "
        "and its parameters' options");
  const int64_t t = k.size(2), end = length_ + t;
  check(k.size(0) == batch_, "KVCache holds ", batch_, " rows, got ", k.size(0));
  if (stepping_) return append_step(layer, k, v);
  check(end <= capacity_, "KVCache holds ", capacity_, " positions; ", length_, " are filled and ",
        t, " more do not fit");
  keys_[layer].narrow(2, length_, t).copy_(k);
  values_[layer].narrow(2, length_, t).copy_(v);
  return {keys_[layer].narrow(2, 0, end), values_[layer].narrow(2, 0, end)};
}

void KVCache::advance(int64_t t) {
  check(t >= 0 && length_ + t <= capacity_, "KVCache cannot advance by ", t, " from ", length_,
        " of ", capacity_);
  length_ += t;
}

void KVCache::truncate(int64_t length) {
  check(length >= 0 && length <= length_, "KVCache cannot truncate to ", length, " of ", length_,
        " filled");
  length_ = length;
}

void KVCache::set_padding(const std::vector<int64_t>& pads) {
  check(length_ == 0, "KVCache padding is set on an empty cache; ", length_, " are filled");
  check(static_cast<int64_t>(pads.size()) == batch_, "KVCache holds ", batch_, " rows, got ",
        pads.size(), " pads");
  bool any = false;
  for (const int64_t p : pads) {
    check(p >= 0 && p < capacity_, "a pad of ", p, " does not fit ", capacity_, " positions");
    any = any || p > 0;
  }
  padding_ = any ? torch::tensor(pads, torch::kLong).to(keys_.front().device()) : torch::Tensor();
  if (fixed_) set_step_pads();
}

void KVCache::keep_rows(const std::vector<int64_t>& rows) {
  check(!rows.empty(), "KVCache must keep at least one row");
  for (const int64_t r : rows) {
    check(r >= 0 && r < batch_, "KVCache holds ", batch_, " rows, asked to keep row ", r);
  }
  const auto index = torch::tensor(rows, torch::kLong).to(keys_.front().device());
  for (size_t i = 0; i < keys_.size(); ++i) {
    keys_[i] = keys_[i].index_select(0, index);
    values_[i] = values_[i].index_select(0, index);
  }
  if (padding_.defined()) {
    padding_ = padding_.index_select(0, index);
    if (padding_.max().item<int64_t>() == 0) padding_ = torch::Tensor();
  }
  batch_ = static_cast<int64_t>(rows.size());
  layout_ = next_layout();
  if (fixed_) set_step_pads();
}

void KVCache::append_rows(const KVCache& other) {
  check(other.keys_.size() == keys_.size() && other.keys_[0].dtype() == keys_[0].dtype() &&
            other.keys_[0].sizes().slice(1).equals(keys_[0].sizes().slice(1)),
        "KVCache::append_rows needs a cache of the same model");
  const int64_t width = std::max(length_, other.length_);
  const int64_t shift = width - length_, other_shift = width - other.length_;
  for (size_t i = 0; i < keys_.size(); ++i) {
    for (auto* pair : {&keys_, &values_}) {
      const torch::Tensor& mine = (*pair)[i];
      const torch::Tensor& theirs = (pair == &keys_ ? other.keys_ : other.values_)[i];
      auto joined = torch::zeros({batch_ + other.batch_, mine.size(1), capacity_, mine.size(3)},
                                 mine.options());
      joined.narrow(0, 0, batch_).narrow(2, shift, length_).copy_(mine.narrow(2, 0, length_));
      joined.narrow(0, batch_, other.batch_)
          .narrow(2, other_shift, other.length_)
          .copy_(theirs.narrow(2, 0, other.length_));
      (*pair)[i] = joined;
    }
  }
  const auto device = keys_.front().device();
  const auto pads_of = [&](const KVCache& c, int64_t add) {
    auto p = c.padding_.defined() ? c.padding_.clone() : torch::zeros({c.batch_}, torch::kLong).to(device);
    return p + add;
  };
  torch::Tensor pads = torch::cat({pads_of(*this, shift), pads_of(other, other_shift)});
  padding_ = pads.max().item<int64_t>() > 0 ? pads : torch::Tensor();
  batch_ += other.batch_;
  length_ = width;
  layout_ = next_layout();
  if (fixed_) set_step_pads();
}

}  // namespace gpt2
