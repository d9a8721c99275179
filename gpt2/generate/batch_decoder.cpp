#include "gpt2/generate/batch_decoder.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpt2/error.h"
#include "gpt2/generate/detail/to_device.h"

namespace gpt2 {
namespace {

// InputError naming the first id of `ids` outside [0, vocab), as "token id
// I at position P of <what>".
void check_ids(const std::vector<int64_t>& ids, int64_t vocab, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      throw InputError(fmt::format("token id {} at position {} of {} is outside the vocabulary "
                                   "[0, {})", ids[i], i, what, vocab));
    }
  }
}

}  // namespace

BatchDecoder::BatchDecoder(GPTImpl& model, bool use_cache, DecodeSteps steps, int64_t slots)
    : model_(model), use_cache_(use_cache), steps_(steps), slots_(slots) {
  if (slots < 0) throw InputError(fmt::format("BatchDecoder slots must be 0 or more, got {}", slots));
  if (slots > 0) {
    cache_ = std::make_unique<SlotCache>(model.config, slots, model.lm_head->weight.options());
  }
}

int64_t BatchDecoder::add(const std::vector<int64_t>& prompt) {
  if (prompt.empty()) throw InputError("a prompt of 0 tokens: there is nothing to continue");
  check_ids(prompt, model_.config.vocab_size(), "the prompt");
  const int64_t id = next_id_++;
  tokens_[id] = prompt;
  order_.push_back(id);
  // Its slot may hold a row that left: prefill() sees the length differ.
  if (cache_ && static_cast<int64_t>(order_.size()) <= cache_->slots()) {
    cache_->free(static_cast<int64_t>(order_.size()) - 1);
  }
  return id;
}

void BatchDecoder::remove(int64_t id) {
  const auto it = std::find(order_.begin(), order_.end(), id);
  if (it == order_.end()) throw InputError(fmt::format("sequence {} is not in the batch", id));
  const auto row = static_cast<int64_t>(it - order_.begin());
  const auto last = static_cast<int64_t>(order_.size()) - 1;
  if (cache_ && last < cache_->slots()) {
    cache_->move(last, row);  // the last row's keys and values into the freed slot
    cache_->free(last);
  } else if (cache_ && row < cache_->slots()) {
    cache_->free(row);  // the last row has no slot yet: prefill() fills this one
  }
  order_[static_cast<size_t>(row)] = order_.back();
  order_.pop_back();
  tokens_.erase(id);
  if (order_.empty()) awaiting_append_ = false;
}

const std::vector<int64_t>& BatchDecoder::tokens(int64_t id) const {
  const auto it = tokens_.find(id);
  if (it == tokens_.end()) throw InputError(fmt::format("sequence {} is not in the batch", id));
  return it->second;
}

void BatchDecoder::make_room() {
  const auto rows = static_cast<int64_t>(order_.size());
  if (cache_ && cache_->slots() >= rows) return;
  const int64_t slots = cache_ ? std::max(rows, 2 * cache_->slots()) : std::max(rows, slots_);
  step_.reset();  // its graphs read the old cache
  cache_.reset();
  cache_ = std::make_unique<SlotCache>(model_.config, slots, model_.lm_head->weight.options());
}

void BatchDecoder::prefill() {
  const int64_t block = model_.config.block_size();
  std::vector<int64_t> into, lengths;
  std::vector<std::vector<int64_t>> contexts;  // each row's cropped context but its last token
  for (size_t r = 0; r < order_.size(); ++r) {
    const auto& t = tokens_.at(order_[r]);
    const auto m = static_cast<int64_t>(t.size());
    const auto slot = static_cast<int64_t>(r);
    // The slot must hold every token but the last at positions 0, 1, ...:
    // past the block the positions shift, so it is filled again each step.
    if (use_cache_ && m <= block && cache_->length(slot) == m - 1) continue;
    const int64_t n = std::min(m, block) - 1;
    cache_->free(slot);
    if (n == 0) continue;  // one token: the step runs it at position 0
    into.push_back(slot);
    lengths.push_back(n);
    contexts.emplace_back(t.end() - n - 1, t.end() - 1);
  }
  if (into.empty()) return;
  // Right-padded with id 0: the forward is causal and the pads lie past
  // each row's length, so no real position sees them.
  const int64_t width = *std::max_element(lengths.begin(), lengths.end());
  torch::Tensor idx = torch::zeros({static_cast<int64_t>(into.size()), width}, torch::kLong);
  auto a = idx.accessor<int64_t, 2>();
  for (size_t i = 0; i < contexts.size(); ++i) {
    for (size_t j = 0; j < contexts[i].size(); ++j) a[i][j] = contexts[i][j];
  }
  cache_->prefill(model_, detail::to_device(idx, model_.lm_head->weight.device()), into, lengths);
}

torch::Tensor BatchDecoder::next_logits() {
  if (order_.empty()) throw InputError("next_logits of an empty batch");
  if (awaiting_append_) throw InputError("next_logits called twice without append");
  torch::NoGradGuard no_grad;
  make_room();
  prefill();
  const auto rows = static_cast<int64_t>(order_.size());
  int64_t width = rows, longest = 0;  // the step's rows; its rows' longest length
  if (steps_ != DecodeSteps::kDynamic) {
    width = 1;
    while (width < rows) width *= 2;
    width = std::min(width, cache_->slots());
  }
  std::vector<int64_t> last(static_cast<size_t>(width), 0);  // a free slot's token: 0
  for (int64_t r = 0; r < rows; ++r) {
    last[static_cast<size_t>(r)] = tokens_.at(order_[static_cast<size_t>(r)]).back();
    longest = std::max(longest, cache_->length(r));
  }
  const auto column = detail::to_device(torch::tensor(last, torch::kLong).unsqueeze(1),
                                        model_.lm_head->weight.device());  // (width, 1)
  torch::Tensor logits;
  if (steps_ == DecodeSteps::kDynamic) {
    cache_->sync(rows);
    logits = cache_->step(model_, column, longest + 1);  // the filled positions only
  } else {
    if (!step_) {
      step_ = std::make_unique<DecodeStep>(model_, *cache_, steps_ == DecodeSteps::kGraphed);
    }
    logits = (*step_)(column).narrow(0, 0, rows);  // ids checked by add() and append()
  }
  cache_->advance(rows);
  awaiting_append_ = true;
  return logits;
}

void BatchDecoder::append(const std::vector<int64_t>& tokens) {
  if (tokens.size() != order_.size()) {
    throw InputError(fmt::format("append needs one token per row ({}), got {}", order_.size(),
                                 tokens.size()));
  }
  check_ids(tokens, model_.config.vocab_size(), "the appended tokens (one a row)");
  for (size_t r = 0; r < tokens.size(); ++r) tokens_[order_[r]].push_back(tokens[r]);
  awaiting_append_ = false;
}

}  // namespace gpt2
