// Crash-safe file writes: the bytes go to a temporary file in the same folder, which is
// fsync'ed and renamed over the target, and the folder is fsync'ed; a reader sees the old
// file or the new one, never half of one. Writers of one target take turns through a lock, and
// each sweeps the temporaries that killed writers of its target left behind. Reading goes
// through the checked opener (data/input_file.h): regular files only, under a size limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace loom::io {

// `write` is called with a function that appends bytes; it may call it any number of times.
using ByteSink = std::function<void(const void* data, size_t size)>;

// Writes `path` through `<path>.tmp-<pid>-<random>`. While it writes it holds an advisory lock
// (flock) on `<path>.lock`, removed when it is done: a second writer of the same target, in
// this process or another, fails at once with an error naming the first writer's process, and
// the target is left as it was. Holding the lock, it first removes `<path>.tmp-<pid>-<n>`
// files whose process no longer exists (kill(pid, 0) fails with ESRCH): what a killed write
// leaves. Temporaries of other targets, or of living processes, are left alone.
void write_file_atomically(const std::string& path,
                           const std::function<void(const ByteSink&)>& write);

// A file ready to be written: its path and a function that hands its bytes to a sink. The
// function owns everything it writes (its contents were taken when it was made: see
// prepare_checkpoint and prepare_model_file, whose tensors wait, copied, on their own device),
// so it may run later and on another thread (io::BackgroundWriter).
struct PreparedFile {
  PreparedFile(std::string path, std::string bytes);  // writes `bytes` as they are
  PreparedFile(std::string path, std::function<void(const ByteSink&)> write);
  std::string path;
  std::function<void(const ByteSink&)> write;
};

// write_file_atomically(file.path, file.write).
void write_file_atomically(const PreparedFile& file);

// Larger files than this are refused before reading, unless the caller passes its own limit:
// about 8x the largest checkpoint of loom's model zoo (ResNet-18 with Adam's moments, 135 MB).
constexpr uint64_t kMaxReadFileBytes = uint64_t{1} << 30;

// The whole file; throws loom::Error naming the path when it is not a regular file (a FIFO,
// a device, a folder), is larger than max_bytes, or cannot be read.
std::string read_file(const std::string& path, uint64_t max_bytes = kMaxReadFileBytes);

}  // namespace loom::io
