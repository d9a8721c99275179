#include "gpt2/io/load_options.h"

#include <fmt/format.h>

#include <utility>

#include "gpt2/error.h"

namespace gpt2 {

namespace {
constexpr std::pair<Mmap, const char*> kNames[] = {
    {Mmap::kOff, "off"}, {Mmap::kOn, "on"}, {Mmap::kAuto, "auto"}};
}  // namespace

std::string to_string(Mmap mmap) {
  for (const auto& [m, name] : kNames) {
    if (m == mmap) return name;
  }
  return "?";
}

Mmap mmap_from_string(const std::string& name) {
  for (const auto& [m, n] : kNames) {
    if (name == n) return m;
  }
  throw ConfigError(fmt::format("unknown mmap mode '{}' (off, on, auto)", name));
}

}  // namespace gpt2
