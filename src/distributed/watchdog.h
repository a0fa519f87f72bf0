// A backend's watchdog thread: it asks `check` every `period` what is wrong ("" when nothing),
// and hands any answer to `fail` (the group's abort). A reason poked in from another thread
// reaches `fail` at once, from this thread: the poking thread may hold a lock `fail` needs. An
// exception out of `setup` or `check` (a sticky CUDA error makes every CUDA call fail) is a
// failure like the others, named as the watchdog's, and ends the checking: it never leaves the
// thread, where it would std::terminate the process and every rank in it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace loom::dist {

class Watchdog {
 public:
  // `setup` runs first on the new thread (the NCCL backend sets the rank's device there, so
  // the thread never makes a context on another GPU).
  Watchdog(std::function<void()> setup, std::function<std::string()> check,
           std::function<void(const std::string&)> fail, std::chrono::milliseconds period);
  // Stops the thread and joins it; a `check` or `fail` under way finishes first.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // `fail(reason)` soon, from the watchdog's thread (the first reason poked wins).
  void poke(const std::string& reason);

 private:
  void run();

  const std::function<void()> setup_;
  const std::function<std::string()> check_;
  const std::function<void(const std::string&)> fail_;
  const std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::string poked_;
  std::thread thread_;  // last: it starts once everything above is made
};

}  // namespace loom::dist
