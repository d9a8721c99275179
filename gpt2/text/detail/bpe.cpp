#include "gpt2/text/detail/bpe.h"

#include <algorithm>

namespace gpt2::bpe {
namespace {

using Candidate = MergeScratch::Candidate;

// Heap order: the lowest rank on top, then the leftmost position.
bool after(const Candidate& a, const Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

void push_pair(const Vocab& vocab, MergeScratch& s, std::int32_t left,
               std::int32_t right) {
  const auto it = vocab.merges.find(pair_key(s.ids[left], s.ids[right]));
  if (it == vocab.merges.end()) return;
  s.heap.push_back(
      {it->second.rank, left, s.ids[left], s.ids[right], it->second.id});
  std::push_heap(s.heap.begin(), s.heap.end(), after);
}

}  // namespace

void merge_piece(std::string_view piece, const Vocab& vocab,
                 MergeScratch& scratch, std::vector<std::int32_t>& out) {
  const auto n = static_cast<std::int32_t>(piece.size());
  MergeScratch& s = scratch;
  s.ids.resize(n);
  s.next.resize(n);
  s.prev.resize(n);
  s.heap.clear();
  for (std::int32_t i = 0; i < n; ++i) {
    s.ids[i] = vocab.byte_ids[static_cast<unsigned char>(piece[i])];
    s.next[i] = i + 1;
    s.prev[i] = i - 1;
  }
  for (std::int32_t i = 0; i + 1 < n; ++i) push_pair(vocab, s, i, i + 1);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), after);
    const Candidate c = s.heap.back();
    s.heap.pop_back();
    const std::int32_t right = s.next[c.left];
    // Stale when either side has since been merged into something else.
    if (s.ids[c.left] != c.left_id || right >= n ||
        s.ids[right] != c.right_id) {
      continue;
    }
    s.ids[c.left] = c.merged_id;
    s.ids[right] = -1;
    s.next[c.left] = s.next[right];
    if (s.next[right] < n) s.prev[s.next[right]] = c.left;
    if (s.prev[c.left] >= 0) push_pair(vocab, s, s.prev[c.left], c.left);
    if (s.next[c.left] < n) push_pair(vocab, s, c.left, s.next[c.left]);
  }
  for (std::int32_t i = 0; i < n; i = s.next[i]) out.push_back(s.ids[i]);
}

}  // namespace gpt2::bpe
