#include "gpt2/text/tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/text/detail/bpe.h"
#include "gpt2/text/detail/bpe_files.h"
#include "gpt2/text/detail/pretokenizer.h"
#include "gpt2/text/detail/vocab.h"

namespace gpt2 {

struct Tokenizer::Impl {
  Impl(const std::filesystem::path& encoder_json,
       const std::filesystem::path& vocab_bpe)
      : vocab(bpe::load_vocab(encoder_json, vocab_bpe)) {}
  bpe::Vocab vocab;
  bpe::Pretokenizer pretokenizer;
};

namespace {

// Pieces merged by BPE in this call, so a repeated word is merged once.
// Bounded: cleared when full, which keeps memory flat on any input.
constexpr std::size_t kCacheEntries = 1 << 15;

// Encodes text without special tokens; holds the per-call buffers and cache.
class PieceEncoder {
 public:
  explicit PieceEncoder(const bpe::Vocab& vocab,
                        const bpe::Pretokenizer& pretokenizer)
      : vocab_(vocab), pretokenizer_(pretokenizer) {}

  void encode(std::string_view text, std::vector<std::int32_t>& out) {
    pieces_.clear();
    pretokenizer_.split(text, pieces_);
    for (const std::string_view piece : pieces_) {
      // A piece past the bound (one "word" of megabytes) is merged in
      // chunks, so its cost stays linear and its buffers small.
      for (std::size_t at = 0; at < piece.size(); at += Tokenizer::kMaxPieceBytes) {
        encode_piece(piece.substr(at, Tokenizer::kMaxPieceBytes), out);
      }
    }
  }

 private:
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) {
    // Whole-token pieces (most words) skip merging, as in tiktoken.
    if (const auto it = vocab_.regular_ids.find(piece); it != vocab_.regular_ids.end()) {
      out.push_back(it->second);
      return;
    }
    if (const auto it = cache_.find(piece); it != cache_.end()) {
      const auto [begin, end] = it->second;
      out.insert(out.end(), cached_ids_.begin() + begin, cached_ids_.begin() + end);
      return;
    }
    const std::size_t first = out.size();
    bpe::merge_piece(piece, vocab_, scratch_, out);
    if (cache_.size() >= kCacheEntries) {
      cache_.clear();
      cached_ids_.clear();
    }
    const std::size_t begin = cached_ids_.size();
    cached_ids_.insert(cached_ids_.end(), out.begin() + first, out.end());
    cache_.emplace(piece, std::make_pair(begin, cached_ids_.size()));
  }

  const bpe::Vocab& vocab_;
  const bpe::Pretokenizer& pretokenizer_;
  std::vector<std::string_view> pieces_;
  bpe::MergeScratch scratch_;
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>>
      cache_;  // piece (a view into the text) -> range in cached_ids_
  std::vector<std::int32_t> cached_ids_;
};

// "token id 50300 at position 7 is outside the vocabulary [0, 50257)".
std::string out_of_vocabulary(std::int32_t id, const std::string& where,
                              std::int32_t size) {
  return "token id " + std::to_string(id) + where +
         " is outside the vocabulary [0, " + std::to_string(size) + ")";
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl)
    : impl_(std::move(impl)) {}

Tokenizer Tokenizer::gpt2() { return from_dir(default_bpe_dir()); }

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  return from_files(dir / bpe::kEncoderJsonName, dir / bpe::kVocabBpeName);
}

Tokenizer Tokenizer::from_files(const std::filesystem::path& encoder_json,
                                const std::filesystem::path& vocab_bpe) {
  return Tokenizer(std::make_shared<const Impl>(encoder_json, vocab_bpe));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text,
                                            bool allow_special) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  PieceEncoder encoder(impl_->vocab, impl_->pretokenizer);
  if (!allow_special) {
    encoder.encode(text, ids);
    return ids;
  }
  // Cut at each special token (the earliest; the first listed on a tie) and
  // encode the text between, as tiktoken does.
  const auto& specials = impl_->vocab.specials;
  std::size_t pos = 0;
  while (true) {
    std::size_t found = std::string_view::npos;
    const std::pair<std::string, std::int32_t>* which = nullptr;
    for (const auto& special : specials) {
      const std::size_t at = text.find(special.first, pos);
      if (at < found) {
        found = at;
        which = &special;
      }
    }
    if (which == nullptr) break;
    encoder.encode(text.substr(pos, found - pos), ids);
    ids.push_back(which->second);
    pos = found + which->first.size();
  }
  encoder.encode(text.substr(pos), ids);
  return ids;
}

std::vector<std::vector<std::int32_t>> Tokenizer::encode_batch(
    const std::vector<std::string>& texts, bool allow_special,
    int threads) const {
  std::vector<std::vector<std::int32_t>> out(texts.size());
  const std::size_t n_threads = std::min<std::size_t>(
      texts.size(), static_cast<std::size_t>(std::max(threads, 1)));
  std::vector<std::exception_ptr> errors(n_threads);
  const auto work = [&](std::size_t t) {
    try {
      for (std::size_t i = t; i < texts.size(); i += n_threads) {
        out[i] = encode(texts[i], allow_special);
      }
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < n_threads; ++t) pool.emplace_back(work, t);
  if (n_threads > 0) work(0);
  for (std::thread& thread : pool) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  const auto& tokens = impl_->vocab.token_bytes;
  const std::int32_t size = vocab_size();
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= size) {
      throw InputError(out_of_vocabulary(
          ids[i], " at position " + std::to_string(i), size));
    }
    bytes += tokens[ids[i]].size();
  }
  std::string text;
  text.reserve(bytes);
  for (const std::int32_t id : ids) text += tokens[id];
  return text;
}

std::string Tokenizer::decode_token(std::int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw InputError(out_of_vocabulary(id, "", vocab_size()));
  }
  return impl_->vocab.token_bytes[id];
}

std::int32_t Tokenizer::eot_token() const { return impl_->vocab.eot; }

std::int32_t Tokenizer::vocab_size() const {
  return static_cast<std::int32_t>(impl_->vocab.token_bytes.size());
}

std::filesystem::path default_bpe_dir() {
  std::vector<std::pair<std::string, std::filesystem::path>> candidates;
  if (const char* env = std::getenv("GPT2_BPE_DIR"); env && *env) {
    candidates.emplace_back("$GPT2_BPE_DIR", env);
  }
#ifdef GPT2_BPE_INSTALL_DIR
  candidates.emplace_back("install directory", GPT2_BPE_INSTALL_DIR);
#endif
#ifdef GPT2_BPE_SOURCE_DIR
  candidates.emplace_back("source directory", GPT2_BPE_SOURCE_DIR);
#endif
  return bpe::first_bpe_dir(candidates);
}

}  // namespace gpt2
