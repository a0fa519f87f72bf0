// Checked opening and reading of input files: stat, open non-blocking, fstat, read to the end.
#include "loom/data/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "loom/tensor/error.h"

namespace loom::data {

namespace {

// Throws unless `st` is a regular file of at most max_bytes.
void check_regular(const std::string& path, const struct stat& st, uint64_t max_bytes,
                   const char* limit_name) {
  LOOM_CHECK(S_ISREG(st.st_mode), path, ": not a regular file (", file_kind(st.st_mode), ")");
  LOOM_CHECK(static_cast<uint64_t>(st.st_size) <= max_bytes, path, ": ", st.st_size,
             " bytes, over the limit of ", max_bytes, " bytes (", limit_name, ")");
}

// Closes the descriptor unless release()d.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

}  // namespace

const char* file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return S_ISREG(mode) ? "a regular file" : "not a file";
}

int open_input_file(const std::string& path, uint64_t max_bytes, const char* limit_name,
                    uint64_t* size) {
  struct stat st {};
  LOOM_CHECK(::stat(path.c_str(), &st) == 0, path, ": cannot open (", std::strerror(errno), ")");
  check_regular(path, st, max_bytes, limit_name);
  Descriptor file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  LOOM_CHECK(file.fd >= 0, path, ": cannot open (", std::strerror(errno), ")");
  LOOM_CHECK(::fstat(file.fd, &st) == 0, path, ": cannot open (", std::strerror(errno), ")");
  check_regular(path, st, max_bytes, limit_name);
  // O_NONBLOCK was only for the open; reads of the regular file block as usual.
  const int flags = ::fcntl(file.fd, F_GETFL);
  LOOM_CHECK(flags >= 0 && ::fcntl(file.fd, F_SETFL, flags & ~O_NONBLOCK) == 0, path,
             ": cannot open (", std::strerror(errno), ")");
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return file.release();
}

std::string read_input_file(const std::string& path, uint64_t max_bytes, const char* limit_name) {
  uint64_t stated = 0;
  Descriptor file;
  file.fd = open_input_file(path, max_bytes, limit_name, &stated);
  // One byte more than stated, so that the end of a file of the stated size is seen at once.
  std::string bytes(static_cast<size_t>(std::min(stated, max_bytes) + 1), '\0');
  size_t have = 0;
  for (;;) {
    if (have == bytes.size()) {
      LOOM_CHECK(have <= max_bytes, path, ": grew past the limit of ", max_bytes,
                 " bytes while being read (", limit_name, ")");
      bytes.resize(
          static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(2 * have, 4096), max_bytes + 1)));
    }
    const ssize_t n = ::read(file.fd, bytes.data() + have, bytes.size() - have);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    LOOM_CHECK(n > 0, path, ": read error (", std::strerror(errno), ")");
    have += static_cast<size_t>(n);
  }
  bytes.resize(have);
  return bytes;
}

}  // namespace loom::data
