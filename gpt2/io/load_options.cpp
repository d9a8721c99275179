#include "gpt2/io/model_source.h"

namespace gpt2 {

template <>
const std::vector<std::pair<Mmap, std::string>>& names<Mmap>() {
  static const std::vector<std::pair<Mmap, std::string>> kNames = {
      {Mmap::kOff, "off"}, {Mmap::kOn, "on"}, {Mmap::kAuto, "auto"}};
  return kNames;
}

std::string to_string(Mmap mmap) { return enum_name(mmap); }

Mmap mmap_from_string(const std::string& name) {
  return enum_from_name<Mmap>(name, "mmap mode");
}

}  // namespace gpt2
