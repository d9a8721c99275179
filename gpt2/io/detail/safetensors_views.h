#pragma once
// The safetensors parse for a loader that copies every tensor into the model
// anyway (internal to gpt2/io; hf_gpt2.cpp reads through it).

#include <string>
#include <string_view>

#include "gpt2/io/safetensors.h"

namespace gpt2::detail {

/// parse_safetensors, each tensor a view into `bytes` (which must outlive
/// it) where its data is aligned for its dtype, a copy where not.
SafetensorsContents parse_safetensors_views(std::string_view bytes, const std::string& source);

}  // namespace gpt2::detail
