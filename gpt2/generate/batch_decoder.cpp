#include "gpt2/generate/batch_decoder.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpt2/error.h"

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

BatchDecoder::BatchDecoder(GPTImpl& model, bool use_cache, DecodeSteps steps)
    : model_(model), use_cache_(use_cache), steps_(steps) {}

int64_t BatchDecoder::add(const std::vector<int64_t>& prompt) {
  if (prompt.empty()) throw InputError("a prompt of 0 tokens: there is nothing to continue");
  check_ids(prompt, model_.config.vocab_size(), "the prompt");
  const int64_t id = next_id_++;
  tokens_[id] = prompt;
  order_.push_back(id);
  if (!cache_valid_ || awaiting_append_) {
    cache_valid_ = false;  // the next step runs every context
    return id;
  }
  // The running rows keep their cache: the new one is prefilled alone (all
  // but its last token, which the next step runs with the others' last)
  // and spliced in.
  const int64_t block = model_.config.block_size();
  const auto n = std::min<int64_t>(block, static_cast<int64_t>(prompt.size()));
  const auto& weight = model_.lm_head->weight;
  KVCache one(model_.config, 1, weight.options());
  torch::NoGradGuard no_grad;
  if (n > 1) {
    const auto context = torch::tensor(std::vector<int64_t>(prompt.end() - n, prompt.end() - 1),
                                       torch::kLong).unsqueeze(0);
    model_.forward_cached(context.to(weight.device()), one);
  }
  if (std::max(cache_->length(), one.length()) >= block) {
    cache_valid_ = false;  // no room for the next token: run every context again
    return id;
  }
  cache_->append_rows(one);
  return id;
}

void BatchDecoder::remove(int64_t id) {
  const auto it = std::find(order_.begin(), order_.end(), id);
  if (it == order_.end()) throw InputError(fmt::format("sequence {} is not in the batch", id));
  const auto row = static_cast<int64_t>(it - order_.begin());
  order_.erase(it);
  tokens_.erase(id);
  if (order_.empty()) {
    step_.reset();
    cache_.reset();
    cache_valid_ = false;
    awaiting_append_ = false;
    return;
  }
  if (cache_valid_) {
    std::vector<int64_t> keep;
    for (int64_t r = 0; r <= static_cast<int64_t>(order_.size()); ++r) {
      if (r != row) keep.push_back(r);
    }
    cache_->keep_rows(keep);
  }
}

const std::vector<int64_t>& BatchDecoder::tokens(int64_t id) const {
  const auto it = tokens_.find(id);
  if (it == tokens_.end()) throw InputError(fmt::format("sequence {} is not in the batch", id));
  return it->second;
}

torch::Tensor BatchDecoder::rebuild() {
  const int64_t block = model_.config.block_size();
  const auto rows = static_cast<int64_t>(order_.size());
  int64_t width = 0;
  for (const int64_t id : order_) {
    width = std::max(width, std::min<int64_t>(block, static_cast<int64_t>(tokens_[id].size())));
  }
  // Right-aligned contexts; the pads hold id 0 and are never attended to.
  torch::Tensor idx = torch::zeros({rows, width}, torch::kLong);
  std::vector<int64_t> pads;
  auto a = idx.accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const auto& t = tokens_[order_[r]];
    const int64_t n = std::min<int64_t>(block, static_cast<int64_t>(t.size()));
    pads.push_back(width - n);
    for (int64_t j = 0; j < n; ++j) a[r][width - n + j] = t[t.size() - n + j];
  }
  const auto& weight = model_.lm_head->weight;
  if (!cache_ || cache_->batch() != rows) {
    step_.reset();
    cache_.emplace(model_.config, rows, weight.options(), steps_ != DecodeSteps::kDynamic);
  }
  cache_->clear();
  cache_->set_padding(pads);
  cache_valid_ = use_cache_;
  return model_.forward_cached(idx.to(weight.device()), *cache_);  // (rows, V)
}

torch::Tensor BatchDecoder::next_logits() {
  if (order_.empty()) throw InputError("next_logits of an empty batch");
  if (awaiting_append_) throw InputError("next_logits called twice without append");
  torch::NoGradGuard no_grad;
  awaiting_append_ = true;
  if (!cache_valid_ || cache_->length() >= model_.config.block_size()) return rebuild();
  std::vector<int64_t> last;
  for (const int64_t id : order_) last.push_back(tokens_[id].back());
  const auto column = torch::tensor(last, torch::kLong).unsqueeze(1)   // (rows, 1)
                          .to(model_.lm_head->weight.device());
  if (steps_ == DecodeSteps::kDynamic) return model_.forward_cached(column, *cache_);
  if (!step_) {
    step_ = std::make_unique<DecodeStep>(model_, *cache_, steps_ == DecodeSteps::kGraphed);
  }
  return (*step_)(column);  // ids checked by add() and append()
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
