#include "gpt2/generate/slot_cache.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "gpt2/error.h"
#include "gpt2/generate/detail/to_device.h"

namespace gpt2 {

// The mode append() serves, for the length of one forward.
class SlotCache::Open {
 public:
  Open(SlotCache& cache, Mode mode) : cache_(cache) { cache_.mode_ = mode; }
  ~Open() { cache_.mode_ = Mode::kNone; }
  Open(const Open&) = delete;
  Open& operator=(const Open&) = delete;

 private:
  SlotCache& cache_;
};

SlotCache::SlotCache(const GPTConfig& config, int64_t slots, const torch::TensorOptions& options)
    : capacity_(config.block_size()) {
  check_input(slots >= 1, "SlotCache needs at least 1 slot, got ", slots);
  std::tie(keys_, values_) = allocate_kv(config, slots, options, /*zeros=*/true, "slots");
  lengths_.assign(static_cast<size_t>(slots), 0);
  const auto longs = torch::TensorOptions(torch::kLong).device(options.device());
  device_lengths_ = torch::zeros({slots}, longs);
  positions_ = torch::arange(capacity_, longs);
}

void SlotCache::check_slot(int64_t slot, const char* what) const {
  check_input(slot >= 0 && slot < slots(), "SlotCache has ", slots(), " slots; ", what, " ", slot);
}

int64_t SlotCache::length(int64_t slot) const {
  check_slot(slot, "asked for the length of slot");
  return lengths_[static_cast<size_t>(slot)];
}

void SlotCache::free(int64_t slot) {
  check_slot(slot, "asked to free slot");
  lengths_[static_cast<size_t>(slot)] = 0;
}

void SlotCache::move(int64_t from, int64_t to) {
  check_slot(from, "asked to move from slot");
  check_slot(to, "asked to move to slot");
  const int64_t n = lengths_[static_cast<size_t>(from)];
  if (from != to && n > 0) {
    for (auto* layers : {&keys_, &values_}) {
      for (auto& t : *layers)
        t.select(0, to).narrow(1, 0, n).copy_(t.select(0, from).narrow(1, 0, n));
    }
  }
  lengths_[static_cast<size_t>(to)] = n;
}

void SlotCache::prefill(GPTImpl& model, const torch::Tensor& idx, const std::vector<int64_t>& into,
                        const std::vector<int64_t>& lengths) {
  check_input(idx.defined() && idx.dim() == 2, "SlotCache::prefill takes idx (k, T)");
  const int64_t k = idx.size(0), T = idx.size(1);
  check_input(static_cast<int64_t>(into.size()) == k && static_cast<int64_t>(lengths.size()) == k,
              "SlotCache::prefill has ", k, " rows but ", into.size(), " slots and ",
              lengths.size(), " lengths");
  check_input(T >= 1 && T <= capacity_, "SlotCache::prefill of ", T, " positions; a slot holds ",
              capacity_);
  std::set<int64_t> seen;
  for (size_t i = 0; i < into.size(); ++i) {
    check_slot(into[i], "asked to prefill slot");
    check_input(seen.insert(into[i]).second, "SlotCache::prefill names slot ", into[i], " twice");
    check_input(lengths[i] >= 1 && lengths[i] <= T, "SlotCache::prefill: row ", i, " has length ",
                lengths[i], ", outside [1, ", T, "]");
  }
  into_ = detail::to_device(torch::tensor(into, torch::kLong), device_lengths_.device());
  {
    Open open(*this, Mode::kPrefill);
    model.forward_hidden(idx, positions_.narrow(0, 0, T).expand({k, T}), *this, {});
  }
  for (size_t i = 0; i < into.size(); ++i) lengths_[static_cast<size_t>(into[i])] = lengths[i];
}

void SlotCache::sync(int64_t rows) {
  check_input(rows >= 1 && rows <= slots(), "SlotCache has ", slots(), " slots; asked to step ",
              rows);
  for (int64_t s = 0; s < rows; ++s) {
    check_input(lengths_[static_cast<size_t>(s)] < capacity_, "slot ", s, " holds ", capacity_,
                " positions, all filled: no room for a step");
  }
  const std::vector<int64_t> head(lengths_.begin(), lengths_.begin() + rows);
  detail::copy_from_host(device_lengths_.narrow(0, 0, rows), torch::tensor(head, torch::kLong));
}

torch::Tensor SlotCache::step(GPTImpl& model, const torch::Tensor& idx, int64_t span) {
  check_input(idx.defined() && idx.dim() == 2 && idx.size(1) == 1 && idx.size(0) <= slots(),
              "SlotCache::step takes idx (rows, 1) for at most ", slots(), " rows");
  check_input(span >= 1 && span <= capacity_, "SlotCache::step attends over ", span,
              " positions; a slot holds ", capacity_);
  const int64_t rows = idx.size(0);
  const auto lengths = device_lengths_.narrow(0, 0, rows);
  const auto mask = positions_.narrow(0, 0, span)
                        .view({1, 1, 1, span})
                        .gt(lengths.view({rows, 1, 1, 1}));  // (rows, 1, 1, span)
  span_ = span;
  Open open(*this, Mode::kStep);
  const auto h = model.forward_hidden(idx, lengths.view({rows, 1}), *this, mask);  // (rows, 1, C)
  return model.lm_head(h.select(1, 0));                                            // (rows, V)
}

void SlotCache::advance(int64_t rows) {
  check_input(rows >= 0 && rows <= slots(), "SlotCache has ", slots(), " slots; asked to advance ",
              rows);
  for (int64_t s = 0; s < rows; ++s) {
    auto& n = lengths_[static_cast<size_t>(s)];
    check_input(n < capacity_, "slot ", s, " cannot advance past ", capacity_);
    ++n;
  }
}

std::pair<torch::Tensor, torch::Tensor> SlotCache::append(size_t layer, const torch::Tensor& k,
                                                          const torch::Tensor& v) {
  check_input(layer < keys_.size(), "SlotCache has ", keys_.size(), " layers, asked for ", layer);
  check_kv_matches(keys_[layer], k);
  if (mode_ == Mode::kPrefill) {  // every position from 0: the queries attend over k, v
    const int64_t T = k.size(2);
    keys_[layer].narrow(2, 0, T).index_copy_(0, into_, k);
    values_[layer].narrow(2, 0, T).index_copy_(0, into_, v);
    return {k, v};
  }
  check_input(mode_ == Mode::kStep, "SlotCache::append outside prefill() and step()");
  const int64_t rows = k.size(0);
  const auto at = device_lengths_.narrow(0, 0, rows)
                      .view({rows, 1, 1, 1})
                      .expand({rows, k.size(1), 1, k.size(3)});  // (rows, nh, 1, hs)
  auto keys = keys_[layer].narrow(0, 0, rows), values = values_[layer].narrow(0, 0, rows);
  keys.scatter_(2, at, k);
  values.scatter_(2, at, v);
  return {keys.narrow(2, 0, span_), values.narrow(2, 0, span_)};  // (rows, nh, span, hs)
}

}  // namespace gpt2
