#pragma once
/// Byte-pair merging of one pre-tokenized piece, as bpe() in OpenAI's
/// encoder.py: repeatedly merge the adjacent pair with the lowest rank
/// (leftmost first on ties) until no adjacent pair has a merge.

#include <cstdint>
#include <string_view>
#include <vector>

#include "gpt2/text/detail/vocab.h"

namespace gpt2::bpe {

/// Working memory for merge_piece, reused across calls to avoid allocation.
struct MergeScratch {
  /// A candidate merge of the pair starting at `left` (a byte position).
  struct Candidate {
    std::int32_t rank;
    std::int32_t left;
    std::int32_t left_id;
    std::int32_t right_id;
    std::int32_t merged_id;
  };
  std::vector<std::int32_t> ids;   ///< token at each live byte position
  std::vector<std::int32_t> next;  ///< next live position (n at the end)
  std::vector<std::int32_t> prev;  ///< previous live position (-1 first)
  std::vector<Candidate> heap;     ///< min-heap by (rank, left)
};

/// Appends the token ids of `piece` (non-empty) to `out`. Uses a heap over
/// a linked list of symbols, so a piece of n bytes costs O(n log n): a
/// 100,000-letter word does not blow up.
void merge_piece(std::string_view piece, const Vocab& vocab,
                 MergeScratch& scratch, std::vector<std::int32_t>& out);

}  // namespace gpt2::bpe
