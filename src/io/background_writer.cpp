// BackgroundWriter: one worker thread, a bounded FIFO of prepared files, and the first failure
// kept until a caller is told.
#include "loom/io/background_writer.h"

#include <cstdio>
#include <exception>
#include <utility>

#include "loom/tensor/error.h"

namespace loom::io {

namespace {

// Writes the file; its error message (naming the path), or nothing. The bytes are freed here,
// on the worker, before it takes the lock again.
std::optional<std::string> write_one(PreparedFile file) {
  try {
    write_file_atomically(file);
    return std::nullopt;
  } catch (const std::exception& e) {
    const std::string message = e.what();
    if (message.find(file.path) != std::string::npos) return message;
    return "writing " + file.path + " failed: " + message;
  } catch (...) {
    return "writing " + file.path + " failed: an exception that is not a std::exception";
  }
}

}  // namespace

BackgroundWriter::BackgroundWriter(size_t max_pending) : max_pending_(max_pending) {
  LOOM_CHECK(max_pending >= 1, "io::BackgroundWriter: max_pending must be at least 1, got ",
             max_pending);
  worker_ = std::thread([this] { work(); });
}

BackgroundWriter::~BackgroundWriter() {
  try {
    flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom: %s\n", e.what());
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  worker_.join();
}

void BackgroundWriter::submit(PreparedFile file) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return failure_.has_value() || queue_.size() < max_pending_; });
  if (failure_) throw_failure();
  queue_.push_back(std::move(file));
  queued_.notify_one();
}

void BackgroundWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !writing_; });
  if (failure_) throw_failure();
}

size_t BackgroundWriter::pending() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (writing_ ? 1 : 0);
}

void BackgroundWriter::throw_failure() {
  std::string message = std::move(*failure_);
  failure_.reset();
  throw Error(message);
}

void BackgroundWriter::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every write done
    PreparedFile file = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    changed_.notify_all();  // room for a waiting submit
    lock.unlock();
    std::optional<std::string> error = write_one(std::move(file));
    lock.lock();
    writing_ = false;
    if (error) {
      if (!queue_.empty()) {
        *error += "; the " + std::to_string(queue_.size()) + " write" +
                  (queue_.size() == 1 ? "" : "s") + " queued after it " +
                  (queue_.size() == 1 ? "was" : "were") + " not made";
      }
      queue_.clear();
      failure_ = std::move(error);
    }
    changed_.notify_all();
  }
}

}  // namespace loom::io
