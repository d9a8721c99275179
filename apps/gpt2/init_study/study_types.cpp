#include "apps/gpt2/init_study/study_types.h"

#include <algorithm>
#include <iterator>

namespace gpt2::app {

std::string scheme_label(ResidualScale scheme) {
  switch (scheme) {
    case ResidualScale::kTwoPerBlock: return "N = 2L";
    case ResidualScale::kOnePerBlock: return "N = L";
    case ResidualScale::kNone: return "N = 1 (none)";
    case ResidualScale::kZero: return "zero";
  }
  return to_string(scheme);
}

const std::vector<Rgb>& scheme_colors() {
  static const std::vector<Rgb> kColors = {
      {31, 90, 180}, {40, 150, 60}, {220, 60, 30}, {140, 60, 170}};
  return kColors;
}

int scheme_color(ResidualScale scheme) {
  const auto* at = std::find(std::begin(kStudySchemes), std::end(kStudySchemes), scheme);
  return 2 + static_cast<int>(at - std::begin(kStudySchemes));
}

}  // namespace gpt2::app
