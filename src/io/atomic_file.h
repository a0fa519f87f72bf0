// Crash-safe file writes: the bytes go to a temporary file in the same folder, which is
// fsync'ed and renamed over the target, and the folder is fsync'ed; a reader sees the old
// file or the new one, never half of one.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace loom::io {

// `write` is called with a function that appends bytes; it may call it any number of times.
using ByteSink = std::function<void(const void* data, size_t size)>;
void write_file_atomically(const std::string& path, const std::function<void(const ByteSink&)>& write);

// The whole file; throws loom::Error naming the path when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace loom::io
