#include "gpt2/file/fd_streambuf.h"

#include <unistd.h>

#include <cerrno>

namespace gpt2::detail {

std::size_t fd_write_limit = 0;

FdStreambuf::FdStreambuf(int fd) : fd_(fd), buffer_(kBufferBytes) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
}

void FdStreambuf::drain() {
  const char* data = pbase();
  std::size_t left = static_cast<std::size_t>(pptr() - pbase());
  while (left > 0 && error_ == 0) {
    std::size_t chunk = left;
    if (fd_write_limit != 0) {
      if (written_ >= fd_write_limit) {
        error_ = ENOSPC;
        break;
      }
      if (written_ + chunk > fd_write_limit) chunk = fd_write_limit - written_;
    }
    const ssize_t n = ::write(fd_, data, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? errno : EIO;
      break;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
    written_ += static_cast<std::size_t>(n);
  }
  setp(buffer_.data(), buffer_.data() + buffer_.size());  // dropped after an error
}

FdStreambuf::int_type FdStreambuf::overflow(int_type ch) {
  drain();
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

int FdStreambuf::sync() {
  drain();
  return 0;
}

int FdStreambuf::finish() {
  drain();
  return error_;
}

}  // namespace gpt2::detail
