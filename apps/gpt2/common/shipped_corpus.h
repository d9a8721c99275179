#pragma once
// The corpus the `gpt2` command ships (tiny Shakespeare, apps/data/), which
// `train` and `init-study train` prepare when given no --data.

#include <iosfwd>
#include <string>

namespace gpt2::app {

/// The shipped corpus (tiny Shakespeare) prepared with `tokenizer` into
/// `dir`: prepared and reported on `out` the first time, reused while
/// DIR/meta.json names the same tokenizer. Returns `dir`.
std::string prepare_shipped_corpus(const std::string& dir, const std::string& tokenizer,
                                   std::ostream& out);

}  // namespace gpt2::app
