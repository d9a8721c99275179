#pragma once
// Where each record's data begins inside a zip archive's bytes, so that the
// checkpoint gate can read stored tensor data straight from the file's
// mapping and check its CRC-32 at memory speed (libzip 1.7 has no call for
// the offset, and its reads run zlib's CRC-32 at under 2 GB/s).

#include <cstdint>
#include <string_view>
#include <vector>

#include "gpt2/io/checkpoint/zip_reader.h"

namespace gpt2::detail {

/// For each of `records` (central-directory order, as ZipReader lists
/// them): the offset in `bytes` of its data, read from the end record
/// (zip64 included), the central directory and the local header. Every
/// field is bounds-checked and each central entry's name must equal the
/// record's; on any disagreement the result is empty, and the caller reads
/// through libzip instead.
std::vector<uint64_t> zip_data_offsets(std::string_view bytes,
                                       const std::vector<ZipRecord>& records);

}  // namespace gpt2::detail
