#include "gpt2/io/checkpoint/pickle_writer.h"

#include <fmt/format.h>

#include <cstring>

#include "gpt2/error.h"
#include "gpt2/io/detail/host_tensor.h"

namespace gpt2::detail {
namespace {

std::string storage_class(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return "FloatStorage";
    case at::kDouble:
      return "DoubleStorage";
    case at::kHalf:
      return "HalfStorage";
    case at::kBFloat16:
      return "BFloat16Storage";
    case at::kLong:
      return "LongStorage";
    case at::kInt:
      return "IntStorage";
    case at::kByte:
      return "ByteStorage";
    case at::kBool:
      return "BoolStorage";
    default:
      throw Error(fmt::format("no torch.save storage class for {}", c10::toString(dtype)));
  }
}

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

PickleWriter::PickleWriter() : out_("\x80\x02") {}

void PickleWriter::none() { out_ += 'N'; }
void PickleWriter::boolean(bool v) { out_ += v ? '\x88' : '\x89'; }

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v < 256) {
    out_ += 'K';
    put_le(out_, static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v < 65536) {
    out_ += 'M';
    put_le(out_, static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += 'J';
    put_le(out_, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
  } else {  // LONG1: 8 bytes of two's complement
    out_ += "\x8a\x08";
    put_le(out_, static_cast<uint64_t>(v), 8);
  }
}

void PickleWriter::real(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  out_ += 'G';
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void PickleWriter::string(std::string_view s) {
  out_ += 'X';
  put_le(out_, s.size(), 4);
  out_ += s;
}

void PickleWriter::global(std::string_view module, std::string_view name) {
  out_ += 'c';
  out_ += module;
  out_ += '\n';
  out_ += name;
  out_ += '\n';
}

void PickleWriter::tensor(const at::Tensor& t, const std::string& what) {
  const void* impl = t.storage().unsafeGetStorageImpl();
  auto [it, fresh] = keys_.emplace(impl, std::to_string(keys_.size()));
  const int64_t element = static_cast<int64_t>(t.element_size());
  const int64_t numel = static_cast<int64_t>(t.storage().nbytes()) / element;
  if (fresh) {
    // Every byte from the CPU: the whole storage, copied there, so that
    // views (the tie) keep their offsets and strides.
    storages_[it->second] =
        detail::host_tensor(at::empty({0}, t.options()).set_(t.storage(), 0, {numel}, {1}), what);
  }
  global("torch._utils", "_rebuild_tensor_v2");
  out_ += "((";
  string("storage");
  global("torch", storage_class(t.scalar_type()));
  string(it->second);
  string("cpu");
  integer(numel);
  out_ += "tQ";
  integer(t.storage_offset());
  begin_tuple();
  for (int64_t s : t.sizes()) integer(s);
  end_tuple();
  begin_tuple();
  for (int64_t s : t.strides()) integer(s);
  end_tuple();
  boolean(false);
  begin_ordered_dict();
  end_dict();
  out_ += "tR";
}

void PickleWriter::begin_dict() { out_ += "}("; }
void PickleWriter::begin_ordered_dict() {
  global("collections", "OrderedDict");
  out_ += ")R(";
}
void PickleWriter::end_dict() { out_ += 'u'; }
void PickleWriter::begin_list() { out_ += "]("; }
void PickleWriter::end_list() { out_ += 'e'; }
void PickleWriter::begin_tuple() { out_ += '('; }
void PickleWriter::end_tuple() { out_ += 't'; }

std::string PickleWriter::finish() { return out_ + '.'; }

}  // namespace gpt2::detail
