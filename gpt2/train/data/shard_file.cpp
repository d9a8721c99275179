#include "gpt2/train/data/shard_file.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "gpt2/error.h"

namespace gpt2 {
namespace {

FormatError bad_shard(const std::string& path, const std::string& rule) {
  return FormatError(fmt::format("token shard '{}': {}", path, rule));
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// numpy's header: a Python dict literal with exactly 'descr', 'fortran_order'
// and 'shape', e.g. {'descr': '<u2', 'fortran_order': False, 'shape': (N,), }
// padded with spaces and ended by '\n'. Returns N; anything else is refused.
int64_t npy_length(std::string_view h, const std::string& path) {
  size_t i = 0;
  const auto fail = [&](const std::string& what) {
    return bad_shard(path, fmt::format("npy header \"{}\" {} (expected {{'descr': '<u2', "
                                       "'fortran_order': False, 'shape': (N,), }})",
                                       std::string(h), what));
  };
  const auto spaces = [&] { while (i < h.size() && h[i] == ' ') ++i; };
  const auto expect = [&](char c) {
    spaces();
    if (i >= h.size() || h[i] != c) throw fail(fmt::format("lacks '{}' at {}", c, i));
    ++i;
  };
  const auto quoted = [&] {
    spaces();
    if (i >= h.size() || (h[i] != '\'' && h[i] != '"')) throw fail(fmt::format("lacks a string at {}", i));
    const char q = h[i++];
    const size_t end = h.find(q, i);
    if (end == std::string_view::npos) throw fail("has an unterminated string");
    const std::string s(h.substr(i, end - i));
    i = end + 1;
    return s;
  };
  const auto word = [&] {
    spaces();
    const size_t start = i;
    while (i < h.size() && std::isalnum(static_cast<unsigned char>(h[i]))) ++i;
    return std::string(h.substr(start, i - start));
  };
  expect('{');
  bool descr = false, order = false, shape = false;
  int64_t n = -1;
  for (;;) {
    spaces();
    if (i < h.size() && h[i] == '}') break;
    const std::string key = quoted();
    expect(':');
    bool* seen = key == "descr" ? &descr : key == "fortran_order" ? &order : key == "shape" ? &shape : nullptr;
    if (!seen) throw fail(fmt::format("has the unknown key '{}'", key));
    if (*seen) throw fail(fmt::format("repeats the key '{}'", key));
    *seen = true;
    if (key == "descr") {
      const std::string d = quoted();
      if (d != "<u2") throw fail(fmt::format("has dtype '{}', not uint16 ('<u2')", d));
    } else if (key == "fortran_order") {
      const std::string v = word();
      if (v != "False") throw fail(fmt::format("has fortran_order {}", v));
    } else {
      expect('(');
      const std::string digits = word();
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit) || digits.size() > 18) {
        throw fail("has a shape that is not one length");
      }
      n = std::stoll(digits);
      expect(',');
      expect(')');
    }
    spaces();
    if (i < h.size() && h[i] == ',') ++i;
    else if (i >= h.size() || h[i] != '}') throw fail(fmt::format("lacks ',' at {}", i));
  }
  ++i;
  spaces();
  if (i + 1 != h.size() || h[i] != '\n') throw fail("does not end with '}' and a newline");
  if (!descr || !order || !shape) throw fail("lacks a key");
  return n;
}

uint32_t le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

std::vector<int32_t> shard_header(int64_t tokens) {
  std::vector<int32_t> header(kShardHeaderInts, 0);
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens);
  return header;
}

std::string shard_name(const std::string& name, const std::string& split, int64_t index) {
  return fmt::format("{}_{}_{:06d}.bin", name, split, index);
}

ShardFile::ShardFile(const std::string& path) : file_(path, "token shard") {
  map_bytes_ = file_.size();
  if (map_bytes_ == 0) throw bad_shard(path, "the file is empty");
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, file_.fd(), 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw file_.error("cannot map it: " + errno_text(errno));
  }
  const auto* bytes = static_cast<const unsigned char*>(map_);
  uint64_t offset = 0;
  int64_t count = 0;
  if (ends_with(path, ".npy")) {
    if (map_bytes_ < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) {
      throw bad_shard(path, "not a numpy file (no \\x93NUMPY magic)");
    }
    const int major = bytes[6];
    if (major < 1 || major > 3) throw bad_shard(path, fmt::format("npy version {} (expected 1, 2 or 3)", major));
    const uint64_t len_bytes = major == 1 ? 2 : 4;
    const uint64_t len = major == 1 ? (bytes[8] | (bytes[9] << 8)) : (map_bytes_ >= 12 ? le32(bytes + 8) : ~0u);
    offset = 8 + len_bytes + len;
    if (offset > map_bytes_) throw bad_shard(path, fmt::format("npy header of {} bytes runs past the file's {}", len, map_bytes_));
    count = npy_length({reinterpret_cast<const char*>(bytes) + 8 + len_bytes, len}, path);
    if (offset % 2 != 0) throw bad_shard(path, fmt::format("npy data at odd offset {}", offset));
  } else {
    if (map_bytes_ < kShardHeaderBytes) {
      throw bad_shard(path, fmt::format("{} bytes, shorter than the {}-byte header", map_bytes_, kShardHeaderBytes));
    }
    int32_t header[3];
    std::memcpy(header, bytes, sizeof header);
    if (header[0] != kShardMagic) {
      throw bad_shard(path, fmt::format("magic {} (expected {}: an llm.c token shard)", header[0], kShardMagic));
    }
    if (header[1] != kShardVersion) {
      throw bad_shard(path, fmt::format("version {} (expected {})", header[1], kShardVersion));
    }
    offset = kShardHeaderBytes;
    count = header[2];
  }
  const uint64_t data_bytes = map_bytes_ - offset;
  if (count <= 0 || data_bytes != static_cast<uint64_t>(count) * 2) {
    throw bad_shard(path, fmt::format("the header says {} tokens ({} bytes), the file holds {} "
                                      "bytes after the header", count, count * 2, data_bytes));
  }
  data_ = reinterpret_cast<const uint16_t*>(bytes + offset);
  size_ = count;
}

ShardFile::~ShardFile() {
  if (map_) ::munmap(map_, map_bytes_);
}

void ShardFile::check_size() const {
  struct stat st {};
  if (::fstat(file_.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) != map_bytes_) {
    throw bad_shard(path(), fmt::format("it changed size under the run (mapped {} bytes, now {})",
                                        map_bytes_, static_cast<int64_t>(st.st_size)));
  }
}

std::vector<std::string> list_shards(const std::string& dir, const std::string& split) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find("_" + split + "_") != std::string::npos && name[0] != '.' &&
        (ends_with(name, ".bin") || ends_with(name, ".npy"))) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpt2
