// The code/ records of an OutputArchive: one module class each, printed by
// LibTorch's python_print as
//   class Module(Module):
//     __parameters__ = ["weight", "bias", ]
//     __buffers__ = []
//     weight : Tensor
//     __annotations__["0"] = __torch__.___torch_mangle_5.Module
// (`__annotations__ = []` first when attribute 0's name is not an
// identifier). A record is accepted only if printing what was parsed gives
// its bytes back, so TorchScript's compiler never sees anything else.
#include "gpt2/io/checkpoint/archive_class.h"

#include <fmt/format.h>

#include <cctype>
#include <set>
#include <stdexcept>


namespace gpt2::detail {
namespace {

bool is_identifier(std::string_view name) {
  static const std::set<std::string, std::less<>> keywords{
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
      "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
      "try", "while", "with", "yield", "print"};
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return !keywords.count(name);
}

// Names the writer produces: module and option names, "params/3", "0x55d0...".
void check_name(std::string_view name) {
  constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/.";
  if (name.empty() || name.size() > 200 || name.substr(0, 2) == "__" ||
      name.find_first_not_of(kChars) != std::string_view::npos) {
    throw std::runtime_error(fmt::format("attribute name '{}' is not allowed", name));
  }
}

std::vector<std::string> quoted_list(std::string_view line, std::string_view head) {
  if (line.substr(0, head.size()) != head || line.empty() || line.back() != ']') {
    throw std::runtime_error(fmt::format("expected '{}...]'", head));
  }
  std::vector<std::string> out;
  auto rest = line.substr(head.size(), line.size() - head.size() - 1);
  while (!rest.empty()) {
    const auto end = rest.find("\", ");
    if (rest[0] != '"' || end == std::string_view::npos) throw std::runtime_error("bad name list");
    out.emplace_back(rest.substr(1, end - 1));
    rest.remove_prefix(end + 3);
  }
  return out;
}

}  // namespace

std::string print_archive_class(const ArchiveClass& c) {
  std::string out = "class Module(Module):\n  __parameters__ = [";
  for (const auto& p : c.parameters) out += fmt::format("\"{}\", ", p);
  out += "]\n  __buffers__ = [";
  for (const auto& p : c.buffers) out += fmt::format("\"{}\", ", p);
  out += "]\n";
  for (size_t i = 0; i < c.attributes.size(); ++i) {
    const auto& [name, type] = c.attributes[i];
    if (is_identifier(name)) {
      out += fmt::format("  {} : {}\n", name, type);
    } else {
      if (i == 0) out += "  __annotations__ = []\n";
      out += fmt::format("  __annotations__[\"{}\"] = {}\n", name, type);
    }
  }
  return out;
}

ArchiveClass parse_archive_class(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto end = text.find('\n');
    if (end == std::string_view::npos) throw std::runtime_error("the last line has no newline");
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end + 1);
  }
  if (lines.size() < 3 || lines[0] != "class Module(Module):") {
    throw std::runtime_error("it does not begin 'class Module(Module):'");
  }
  ArchiveClass c;
  c.parameters = quoted_list(lines[1], "  __parameters__ = [");
  c.buffers = quoted_list(lines[2], "  __buffers__ = [");
  for (size_t i = 3; i < lines.size(); ++i) {
    auto line = lines[i];
    if (line == "  __annotations__ = []") continue;
    constexpr std::string_view kAnnotation = "  __annotations__[\"";
    std::string_view name, type;
    if (line.substr(0, kAnnotation.size()) == kAnnotation) {
      line.remove_prefix(kAnnotation.size());
      const auto end = line.find("\"] = ");
      if (end == std::string_view::npos) throw std::runtime_error("bad __annotations__ line");
      name = line.substr(0, end), type = line.substr(end + 5);
    } else {
      const auto colon = line.find(" : ");
      if (line.substr(0, 2) != "  " || colon == std::string_view::npos) {
        throw std::runtime_error(fmt::format("line {} is not an attribute", i + 1));
      }
      name = line.substr(2, colon - 2), type = line.substr(colon + 3);
    }
    check_name(name);
    c.attributes.emplace_back(name, type);
  }
  std::set<std::string> names;
  for (const auto& [name, type] : c.attributes) {
    if (!names.insert(name).second) throw std::runtime_error(fmt::format("'{}' repeated", name));
  }
  for (const auto* list : {&c.parameters, &c.buffers}) {
    for (const auto& p : *list) {
      if (!names.erase(p)) throw std::runtime_error(fmt::format("'{}' is not an attribute", p));
    }
  }
  return c;
}

}  // namespace gpt2::detail
