#include "apps/gpt2/common/shipped_corpus.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>

#include "gpt2/error.h"
#include "gpt2/train/dataset.h"

namespace gpt2::app {

std::string prepare_shipped_corpus(const std::string& dir, const std::string& tokenizer,
                                   std::ostream& out) {
  if (std::filesystem::exists(dir + "/meta.json")) {
    try {
      if (read_dataset_meta(dir).tokenizer == tokenizer) return dir;
    } catch (const FileError&) {
      // A preparation that stopped midway (or a damaged folder): made again.
    }
  }
  const DatasetMeta m = prepare_dataset({GPT2_SHIPPED_CORPUS}, dir, tokenizer);
  fmt::print(out, "prepared  {} -> {} ({}, {} ids): train {} tokens, val {}\n",
             GPT2_SHIPPED_CORPUS, dir, tokenizer, m.vocab_size, m.train_tokens, m.val_tokens);
  return dir;
}

}  // namespace gpt2::app
