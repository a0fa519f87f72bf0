// Atomic writes (lock, sweep, temporary, fsync, rename) and the checked whole-file read.
#include "loom/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "loom/data/input_file.h"
#include "loom/tensor/error.h"

namespace loom::io {

namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string os_error() { return std::strerror(errno); }

bool all_digits(const std::string& s, size_t max_length) {
  if (s.empty() || s.size() > max_length) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

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

// flock on `<target>.lock` for the whole write. The file is removed by its holder before the
// lock is released, so a writer that opened it just before the removal would lock a file no
// longer named there: after locking, the descriptor must still be the file at that name, else
// it tries again with the new one. A killed holder's lock is released by the kernel; its file
// stays and the next writer takes it over.
class TargetLock {
 public:
  explicit TargetLock(const std::string& target) : path_(target + ".lock") {
    for (int attempt = 0; attempt < 100; ++attempt) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
      LOOM_CHECK(fd_ >= 0, "cannot write ", target, ": cannot create its lock file ", path_, ": ",
                 os_error());
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        if (error == ENOLCK || error == EOPNOTSUPP || error == ENOSYS) {
          // A file system without locks: the write is still atomic, only unguarded.
          ::close(fd_);
          fd_ = -1;
          ::unlink(path_.c_str());
          return;
        }
        const std::string holder = read_holder();
        ::close(fd_);
        fd_ = -1;
        LOOM_CHECK(error != EWOULDBLOCK, "cannot write ", target, ": ",
                   holder.empty() ? std::string("another process") : "process " + holder,
                   " is writing it at the same time (it holds ", path_, ")");
        LOOM_FAIL("cannot write ", target, ": cannot lock ", path_, ": ", std::strerror(error));
      }
      struct stat held {
      }, named{};
      if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
        // For a second writer's message; failing to note it costs only the process id there.
        const std::string pid = std::to_string(::getpid()) + "\n";
        const bool noted = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) > 0;
        (void)noted;
        return;
      }
      ::close(fd_);
      fd_ = -1;
    }
    LOOM_FAIL("cannot write ", target, ": its lock file ", path_, " keeps being replaced");
  }
  ~TargetLock() {
    if (fd_ < 0) return;
    ::unlink(path_.c_str());
    ::close(fd_);
  }
  TargetLock(const TargetLock&) = delete;
  TargetLock& operator=(const TargetLock&) = delete;

 private:
  // The holder's process id as it wrote it ("" when it has not yet).
  std::string read_holder() const {
    char text[32] = {0};
    const ssize_t n = ::pread(fd_, text, sizeof(text) - 1, 0);
    std::string pid(text, n > 0 ? static_cast<size_t>(n) : 0);
    while (!pid.empty() && pid.back() == '\n') pid.pop_back();
    return all_digits(pid, 10) ? pid : "";
  }

  std::string path_;
  int fd_ = -1;
};

// Removes `<target>.tmp-<pid>-<digits>` files whose writer process is gone. Called with the
// target's lock held, so no living loom writer of this target owns one; the process check
// still spares a writer that takes no lock (an older loom).
void sweep_stale_temporaries(const std::string& target) {
  const std::string prefix = name_of(target) + ".tmp-";
  DIR* dir = ::opendir(folder_of(target).c_str());
  if (dir == nullptr) return;  // the write itself will report the folder
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == std::string::npos || !all_digits(rest.substr(0, dash), 9) ||
        !all_digits(rest.substr(dash + 1), 20)) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // EPERM: it exists
    ::unlinkat(::dirfd(dir), name.c_str(), 0);
  }
  ::closedir(dir);
}

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(const ByteSink&)>& write) {
  const TargetLock lock(path);
  sweep_stale_temporaries(path);
  TemporaryFile tmp;
  tmp.path =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
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
  LOOM_CHECK(::rename(tmp.path.c_str(), path.c_str()) == 0, "cannot replace ", path, ": ",
             os_error());
  tmp.keep = true;
  // The rename is durable only once the folder's entry is on disk.
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

PreparedFile::PreparedFile(std::string file_path, std::string bytes)
    : path(std::move(file_path)), write([bytes = std::move(bytes)](const ByteSink& sink) {
        sink(bytes.data(), bytes.size());
      }) {}

PreparedFile::PreparedFile(std::string file_path, std::function<void(const ByteSink&)> file_write)
    : path(std::move(file_path)), write(std::move(file_write)) {}

void write_file_atomically(const PreparedFile& file) {
  write_file_atomically(file.path, file.write);
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  return data::read_input_file(path, max_bytes, "io::read_file's max_bytes");
}

}  // namespace loom::io
