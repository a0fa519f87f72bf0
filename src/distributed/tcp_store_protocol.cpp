// Frames and blocking socket I/O of the TCP store (tcp_store_protocol.h).
#include "loom/distributed/tcp_store_protocol.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "loom/tensor/error.h"

namespace loom::dist::tcp {

FrameWriter& FrameWriter::u8(uint8_t v) {
  body_.push_back(static_cast<char>(v));
  return *this;
}

FrameWriter& FrameWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) body_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}

FrameWriter& FrameWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) body_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}

FrameWriter& FrameWriter::str(const std::string& s) {
  LOOM_CHECK(s.size() <= kMaxFrame, "TcpStore: a key or value of ", s.size(),
             " bytes exceeds the store's limit of ", kMaxFrame, " bytes");
  u32(static_cast<uint32_t>(s.size()));
  body_.append(s);
  return *this;
}

std::string FrameWriter::frame(const char* what) {
  const size_t size = body_.size() - 4;
  LOOM_CHECK(size <= kMaxFrame, "TcpStore: ", what, " needs a message of ", size,
             " bytes, above the store's limit of ", kMaxFrame, " bytes");
  for (int i = 0; i < 4; ++i) body_[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  return std::move(body_);
}

void FrameReader::need(size_t n) {
  LOOM_CHECK(left_ >= n, "TcpStore: a truncated message (", n, " more bytes expected, ", left_,
             " left): the peer does not speak this protocol");
}

uint8_t FrameReader::u8() {
  need(1);
  const auto v = static_cast<uint8_t>(*p_);
  p_ += 1;
  left_ -= 1;
  return v;
}

uint32_t FrameReader::u32() {
  need(4);
  const uint32_t v = read_u32_le(p_);
  p_ += 4;
  left_ -= 4;
  return v;
}

uint64_t FrameReader::u64() {
  need(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p_[i])} << (8 * i);
  p_ += 8;
  left_ -= 8;
  return v;
}

std::string FrameReader::str() {
  const uint32_t n = u32();
  need(n);
  std::string s(p_, n);
  p_ += n;
  left_ -= n;
  return s;
}

uint32_t read_u32_le(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::chrono::milliseconds heartbeat_tick(std::chrono::milliseconds heartbeat_timeout) {
  return std::clamp<std::chrono::milliseconds>(heartbeat_timeout / 4, std::chrono::milliseconds(1),
                                               std::chrono::seconds(1));
}

bool same_secret(const std::string& a, const std::string& b) {
  // Every byte is compared whatever the first difference: a guesser timing the refusals learns
  // nothing of how much of the secret it has right.
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return differ == 0;
}

std::string errno_text(int err) {
  char buffer[256];
  // The GNU strerror_r returns the text, which may or may not be `buffer`.
  return std::string(strerror_r(err, buffer, sizeof buffer));
}

std::string send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);  // a dead peer: EPIPE, not SIGPIPE
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return "the send timed out";  // SO_SNDTIMEO
      return errno_text(errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return "";
}

std::string recv_all(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n == 0) return "closed";
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_text(errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return "";
}

}  // namespace loom::dist::tcp
