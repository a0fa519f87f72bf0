// The one way loom opens a file it reads (photographs, models, checkpoints, JSON): only a
// regular file, no larger than a stated limit, opened so that a FIFO cannot block, and read to
// its end. Downloaded files are hostile: a FIFO, /dev/zero or a folder with a photograph's name
// ends in an error naming it, never in a hang or in memory that grows without bound. It lives
// in data/, the lowest room that reads files, so that io/ can use it too.
#pragma once

#include <cstdint>
#include <string>

namespace loom::data {

// A read-only descriptor (close-on-exec, blocking reads) of the regular file at `path`, which
// the caller closes. Otherwise throws loom::Error "<path>: <problem>": it cannot be opened, is
// not a regular file (a folder, a named pipe, a device, a socket), or is more than max_bytes
// long; `limit_name` names the setting that raises max_bytes. The type is checked before the
// open (opening a device can have effects) and again on the descriptor (the path may have been
// swapped in between); the open is non-blocking, so a FIFO swapped in cannot block it.
// `size` (optional) receives the size the file states.
int open_input_file(const std::string& path, uint64_t max_bytes, const char* limit_name,
                    uint64_t* size = nullptr);

// The whole file, with the checks above, read to its end rather than to its stated size (files
// in /proc state 0); one that grows past max_bytes while being read is an error too.
std::string read_input_file(const std::string& path, uint64_t max_bytes, const char* limit_name);

// What a stat() mode that is not a regular file is, for messages: "a folder", "a named pipe",
// "a character device", "a block device", "a socket", "a symbolic link" or "not a file".
const char* file_kind(unsigned mode);

}  // namespace loom::data
