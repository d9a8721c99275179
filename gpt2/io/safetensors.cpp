#include "gpt2/io/safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>

#include "gpt2/error.h"
#include "gpt2/file/atomic_file.h"
#include "gpt2/file/json.h"
#include "gpt2/file/mapped_file.h"
#include "gpt2/io/detail/host_tensor.h"
#include "gpt2/io/detail/safetensors_views.h"
#include "gpt2/ops/memory.h"

namespace gpt2 {
namespace {

using nlohmann::json;

// The three float dtypes, by the format's names.
struct Dtype {
  const char* name;
  torch::ScalarType type;
  uint64_t size;
};
constexpr Dtype kDtypes[] = {{"F32", torch::kFloat, 4},
                             {"F16", torch::kHalf, 2},
                             {"BF16", torch::kBFloat16, 2}};

// One checked header entry.
struct Entry {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

[[noreturn]] void fail_safetensors(const std::string& source, const std::string& rule) {
  throw FormatError(fmt::format("'{}' is not a valid safetensors file: {}", source, rule));
}

uint64_t read_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

Entry parse_entry(const std::string& name, const json& value, const std::string& source) {
  auto bad = [&](const std::string& what) { fail_safetensors(source, fmt::format("tensor '{}': {}", name, what)); };
  if (!value.is_object()) bad("its entry is not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) bad(fmt::format("its entry has no {}", field));
  }
  Entry e;
  e.name = name;
  const json& dtype = value["dtype"];
  if (!dtype.is_string()) bad("dtype is not a string");
  const auto* found = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const Dtype& d) {
    return dtype.get<std::string>() == d.name;
  });
  if (found == std::end(kDtypes)) {
    bad(fmt::format("dtype {} is not supported (F32, F16, BF16)", dtype.dump()));
  }
  e.dtype = *found;
  const json& shape = value["shape"];
  if (!shape.is_array()) bad("shape is not an array");
  uint64_t numel = 1;
  for (const json& d : shape) {
    if (!d.is_number_unsigned()) bad(fmt::format("shape {} has an entry that is not a size", shape.dump()));
    const uint64_t size = d.get<uint64_t>();
    if (size > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, size, &numel)) {
      bad(fmt::format("shape {} overflows", shape.dump()));
    }
    e.shape.push_back(static_cast<int64_t>(size));
  }
  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    bad(fmt::format("data_offsets {} is not [begin, end]", offsets.dump()));
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.end < e.begin) bad(fmt::format("data_offsets [{}, {}] end before they begin", e.begin, e.end));
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, e.dtype.size, &bytes) || bytes != e.end - e.begin) {
    bad(fmt::format("data_offsets [{}, {}] hold {} bytes, shape {} of {} needs {} x {}", e.begin,
                    e.end, e.end - e.begin, shape.dump(), e.dtype.name, numel, e.dtype.size));
  }
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& source) {
  if (!value.is_object()) fail_safetensors(source, "__metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) fail_safetensors(source, fmt::format("__metadata__ value of '{}' is not a string", key));
    out[key] = v.get<std::string>();
  }
  return out;
}

SafetensorsContents parse(std::string_view bytes, const std::string& source, bool views) {
  if (bytes.size() < 8) {
    fail_safetensors(source, fmt::format("{} bytes, shorter than the 8-byte header length", bytes.size()));
  }
  const uint64_t n = read_le64(bytes.data());
  if (n > kSafetensorsMaxHeader) {
    fail_safetensors(source, fmt::format("header length {} exceeds the limit {}", n, kSafetensorsMaxHeader));
  }
  if (n > bytes.size() - 8) {
    fail_safetensors(source, fmt::format("header length {} runs past the end of the file ({} bytes)", n,
                             bytes.size()));
  }
  std::string_view text = bytes.substr(8, n);
  if (text.empty() || text.front() != '{') fail_safetensors(source, "the header does not begin with '{'");
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);  // padding
  if (text.back() != '}') fail_safetensors(source, "the header has bytes other than spaces after its '}'");
  const json header =
      detail::parse_json(text, fmt::format("'{}' is not a valid safetensors file: the header", source));
  if (!header.is_object()) fail_safetensors(source, "the header is not a JSON object");
  if (header.size() > kSafetensorsMaxTensors + 1) {  // + __metadata__
    fail_safetensors(source, fmt::format("the header lists {} entries, more than the {} tensors this reader "
                             "takes", header.size(), kSafetensorsMaxTensors));
  }

  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      out.metadata = parse_metadata(value, source);
    } else {
      entries.push_back(parse_entry(key, value, source));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  const uint64_t data_size = bytes.size() - 8 - n;
  uint64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin != at) {
      fail_safetensors(source, fmt::format("tensor '{}' begins at {} but the previous tensor ends at {} ({})",
                               e.name, e.begin, at, e.begin > at ? "a hole" : "an overlap"));
    }
    at = e.end;
  }
  if (at != data_size) {
    fail_safetensors(source, fmt::format("the tensors end at {} but the data section holds {} bytes", at,
                             data_size));
  }
  const char* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) {
    const char* from = data + e.begin;
    const bool aligned = reinterpret_cast<uintptr_t>(from) % e.dtype.size == 0;
    if (views && aligned && e.end > e.begin) {
      out.tensors.emplace_back(e.name, torch::from_blob(const_cast<char*>(from), e.shape,
                                                        torch::TensorOptions(e.dtype.type)));
      continue;
    }
    auto tensor = empty_large(e.shape, e.dtype.type);
    if (e.end > e.begin) std::memcpy(tensor.data_ptr(), from, e.end - e.begin);
    out.tensors.emplace_back(e.name, std::move(tensor));
  }
  return out;
}

}  // namespace

SafetensorsContents parse_safetensors(std::string_view bytes, const std::string& source) {
  return parse(bytes, source, /*views=*/false);
}

SafetensorsContents detail::parse_safetensors_views(std::string_view bytes,
                                                    const std::string& source) {
  return parse(bytes, source, /*views=*/true);
}

SafetensorsContents read_safetensors(const std::string& path) {
  const detail::MappedFile file(path);
  return parse_safetensors(file.bytes(), path);
}

std::string safetensors_bytes(const SafetensorsContents& contents, const std::string& file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!contents.metadata.empty()) header["__metadata__"] = contents.metadata;
  uint64_t at = 0;
  std::vector<torch::Tensor> data;
  for (const auto& [name, tensor] : contents.tensors) {
    const auto type = tensor.scalar_type();
    const auto* d = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                 [type](const Dtype& x) { return x.type == type; });
    TORCH_CHECK(d != std::end(kDtypes), "safetensors writer: tensor ", name, " has dtype ",
                tensor.scalar_type(), "; it writes float32, float16 and bfloat16");
    data.push_back(detail::host_tensor(tensor, fmt::format("{} of {}", name, file)));
    const uint64_t size = data.back().numel() * d->size;
    header[name] = {{"dtype", d->name}, {"shape", tensor.sizes().vec()}, {"data_offsets", {at, at + size}}};
    at += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  out += text;
  out.reserve(out.size() + at);
  for (const auto& t : data) out.append(detail::host_bytes(t));
  return out;
}

void write_safetensors(const std::string& path, const SafetensorsContents& contents) {
  write_file_atomically(path, safetensors_bytes(contents, fmt::format("safetensors file '{}'", path)));
}

}  // namespace gpt2
