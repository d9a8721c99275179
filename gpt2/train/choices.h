#pragma once
/// Multiple-choice scoring in the completion style llm.c and build-nanogpt
/// use for HellaSwag: each ending is scored by the loss of its tokens given
/// the context, and the model's pick is the ending with the lowest sum
/// (`acc`) or the lowest mean per token (`acc_norm`, which does not favour
/// short endings).
///
/// The file is JSON Lines, one item per line:
///   {"ctx": "A man sits on a roof. He", "endings": ["starts ...", ...], "label": 0}
/// Other keys (HellaSwag's "ind", "activity_label", ...) are ignored; blank
/// lines are skipped.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpt2/model/gpt.h"
#include "gpt2/train/evaluate.h"

namespace gpt2 {

/// One item of a choices file.
struct ChoiceItem {
  /// The context, non-empty.
  std::string context;
  /// Two or more candidate endings, each non-empty.
  std::vector<std::string> endings;
  /// Index of the right ending in `endings`.
  int64_t label = 0;
  /// 1-based line of the file it came from, for messages.
  int64_t line = 0;
};

/// Largest choices file read (HellaSwag's validation set is 11 MB).
inline constexpr uint64_t kMaxChoicesBytes = uint64_t{1} << 30;

/// Reads a choices file. Throws FileError for a file that cannot be read,
/// FormatError `'<path>' line <n>: <what is wrong, with the value>` for a
/// line that is not JSON or not the schema (ctx a non-empty string,
/// endings an array of at least 2 non-empty strings, label an integer in
/// [0, endings)), and for a file with no item.
std::vector<ChoiceItem> read_choices(const std::string& path);

/// The tally of score_choices.
struct ChoiceResult {
  /// Items scored.
  int64_t count = 0;
  /// Items whose lowest summed loss is at the label.
  int64_t correct = 0;
  /// Items whose lowest mean loss per token is at the label.
  int64_t correct_norm = 0;
  /// correct / count and correct_norm / count.
  double acc() const { return count ? static_cast<double>(correct) / count : 0.0; }
  double acc_norm() const { return count ? static_cast<double>(correct_norm) / count : 0.0; }
};

/// Scores every item: its context through `encode`, each ending as `" " +
/// ending` through `encode` (the endings follow the context after a space,
/// as llm.c and build-nanogpt tokenize them), by ending_scores. Ties go to
/// the first ending. Throws InputError `line <n>: ...` for an item whose
/// label is not an index of its endings, or whose ending does not fit the
/// model (see ending_scores), before that item is counted. `on_item`, when set,
/// is called after each item with the items done.
ChoiceResult score_choices(GPTImpl& model, const std::vector<ChoiceItem>& items,
                           const std::function<std::vector<int32_t>(std::string_view)>& encode,
                           const std::function<void(int64_t done)>& on_item = {});

}  // namespace gpt2
