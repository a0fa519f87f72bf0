// Atomic file writes on one background thread, in the order they were queued: the caller makes
// a file's bytes at once (a PreparedFile, its snapshot) and goes on while the worker takes them
// through write_file_atomically (lock, temporary, fsync, rename, fsync of the folder). A failed
// write is never lost: it is thrown, naming the file, from the next submit() or flush().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "loom/io/atomic_file.h"

namespace loom::io {

// One writer's files reach the disk one at a time in submission order, so a reader (or a run
// resumed after a crash) finds them in a state the same writes made on the caller's thread
// could have left: a file written before another is never older than it. A failure keeps that
// promise too: the writes queued behind the one that failed are dropped, as the caller would
// not have reached them had it written itself, and submit() refuses new ones until the error
// has been thrown. Two writes of one path are never merged.
//
// Files it writes must not be written by others meanwhile (write_file_atomically refuses a
// second writer of a target, this process's too): call flush() first. Thread-safe.
class BackgroundWriter {
 public:
  // At most `max_pending` writes wait besides the one being written (at least 1): submit()
  // waits while that many do, so the writer holds the bytes of at most max_pending + 1 files.
  explicit BackgroundWriter(size_t max_pending = 4);
  // Waits for every queued write, as flush() does, then ends the worker. A destructor must not
  // throw: a failure is printed to stderr ("loom: <message>"). Call flush() first to get it as
  // an exception.
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Queues `file` behind every write queued before it; returns once it is queued (waiting for
  // room while max_pending writes wait). When an earlier write failed it throws that write's
  // loom::Error instead (once), and `file` is not queued.
  void submit(PreparedFile file);
  // Returns once every write queued so far is on disk or dropped; then throws, once, the
  // loom::Error of a write that failed since the last error thrown. Always ends once the
  // worker finishes its current write, also after a failure.
  void flush();
  // The writes queued or being written now.
  size_t pending() const;

 private:
  void work();
  [[noreturn]] void throw_failure();  // with mutex_ held: throws failure_ and forgets it

  const size_t max_pending_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;   // a write to do, or the end
  std::condition_variable changed_;  // room in the queue, or a write done
  std::deque<PreparedFile> queue_;
  bool writing_ = false;
  bool stopping_ = false;
  std::optional<std::string> failure_;  // the message of a failed write not yet thrown
  std::thread worker_;
};

}  // namespace loom::io
