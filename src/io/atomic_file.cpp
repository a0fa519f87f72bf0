#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "tensor/error.h"

namespace loom::io {

namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string os_error() { return std::strerror(errno); }

// Closes the descriptor and removes the temporary file unless release() was called.
struct TemporaryFile {
  std::string path;
  int fd = -1;
  bool keep = false;
  ~TemporaryFile() {
    if (fd >= 0) ::close(fd);
    if (!keep) ::unlink(path.c_str());
  }
};

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const ByteSink&)>& write) {
  TemporaryFile tmp;
  tmp.path = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  LOOM_CHECK(tmp.fd >= 0, "cannot write ", path, ": ", os_error());
  write([&](const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(tmp.fd, p, size);
      if (n < 0 && errno == EINTR) continue;
      LOOM_CHECK(n > 0, "writing ", path, " failed: ", os_error());
      p += n;
      size -= static_cast<size_t>(n);
    }
  });
  LOOM_CHECK(::fsync(tmp.fd) == 0, "writing ", path, " failed (fsync): ", os_error());
  LOOM_CHECK(::close(tmp.fd) == 0, "writing ", path, " failed (close): ", os_error());
  tmp.fd = -1;
  LOOM_CHECK(::rename(tmp.path.c_str(), path.c_str()) == 0, "cannot replace ", path, ": ", os_error());
  tmp.keep = true;
  // The rename is durable only once the folder's entry is on disk.
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "cannot open ", path, ": ", os_error());
  struct stat st {};
  LOOM_CHECK(::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode), path, " is not a regular file");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  LOOM_CHECK(in.gcount() == static_cast<std::streamsize>(bytes.size()), "reading ", path, " failed");
  return bytes;
}

}  // namespace loom::io
