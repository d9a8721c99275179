#include "gpt2/io/model_source.h"

#include <fmt/format.h>

#include "gpt2/error.h"
#include "gpt2/ops/memory.h"

namespace gpt2 {

void check_fits_in_memory(const GPTConfig& config, int64_t bytes_per_parameter) {
  const double need = static_cast<double>(config.num_parameters()) * bytes_per_parameter;
  const MemoryLimit have = usable_memory();
  if (have.bytes > 0 && need > have.bytes) {
    throw ConfigError(fmt::format(
        "the model's {} parameters need {:.1f} GB at {} bytes each, more than the {:.1f} GB "
        "this process may use ({})", config.num_parameters(), need / 1e9, bytes_per_parameter,
        have.bytes / 1e9, have.source));
  }
}

}  // namespace gpt2
