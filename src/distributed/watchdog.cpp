// Watchdog of watchdog.h.
#include "loom/distributed/watchdog.h"

#include <exception>

#include "loom/tensor/error.h"

namespace loom::dist {

Watchdog::Watchdog(std::function<void()> setup, std::function<std::string()> check,
                   std::function<void(const std::string&)> fail, std::chrono::milliseconds period)
    : setup_(std::move(setup)),
      check_(std::move(check)),
      fail_(std::move(fail)),
      period_(period),
      thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Watchdog::poke(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (poked_.empty()) poked_ = reason;
  changed_.notify_all();
}

void Watchdog::run() {
  bool checking = true;
  try {
    if (setup_) setup_();
  } catch (const std::exception& e) {
    fail_(detail::concat("the watchdog could not start: ", e.what()));
    checking = false;
  }
  for (;;) {
    std::string reason;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, period_, [&] { return stopping_ || !poked_.empty(); });
      if (stopping_) return;
      reason.swap(poked_);
    }
    if (reason.empty() && checking) {
      try {
        reason = check_();
      } catch (const std::exception& e) {
        reason = detail::concat("the watchdog's check failed: ", e.what());
        checking = false;
      } catch (...) {
        reason = "the watchdog's check failed with an exception that is not a std::exception";
        checking = false;
      }
    }
    if (reason.empty()) continue;
    try {
      fail_(reason);
    } catch (...) {
      // Failing is the last thing a watchdog can do; an error in it has nowhere else to go.
    }
  }
}

}  // namespace loom::dist
