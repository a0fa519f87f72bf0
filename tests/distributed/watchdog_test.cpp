// dist::Watchdog: a backend's watchdog thread. An exception out of its check (a sticky CUDA
// error makes every CUDA call throw) must become the group's abort, never std::terminate of
// the process and every rank in it (finding F9); a reason poked from another thread reaches the
// abort from the watchdog's own thread (the poker may hold a lock the abort needs).
#include "loom/distributed/watchdog.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "testing.h"

namespace loom::dist {
namespace {

using namespace std::chrono_literals;

// What a watchdog handed to its `fail`, waited for with a deadline.
struct Failures {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> reasons;
  std::vector<std::thread::id> threads;

  void add(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex);
    reasons.push_back(reason);
    threads.push_back(std::this_thread::get_id());
    changed.notify_all();
  }
  bool wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 10s * testing::kSlowdown, [&] { return reasons.size() >= n; });
  }
};

TEST(Watchdog, AnExceptionFromItsCheckAbortsInsteadOfTerminating) {
  Failures failures;
  std::atomic<int> checks{0};
  {
    Watchdog dog(
        {},
        [&]() -> std::string {
          ++checks;
          throw Error("CUDA error: an illegal memory access was encountered in cudaEventQuery");
        },
        [&](const std::string& r) { failures.add(r); }, 1ms);
    ASSERT_TRUE(failures.wait_for(1));
    std::this_thread::sleep_for(20ms);  // the watchdog lives on, without checking again
  }
  ASSERT_EQ(failures.reasons.size(), 1u);
  EXPECT_NE(failures.reasons[0].find("the watchdog's check failed"), std::string::npos)
      << failures.reasons[0];
  EXPECT_NE(failures.reasons[0].find("illegal memory access"), std::string::npos)
      << failures.reasons[0];
  EXPECT_EQ(checks.load(), 1);
}

TEST(Watchdog, AFailingSetupIsAFailureToo) {
  Failures failures;
  bool checked = false;
  {
    Watchdog dog([] { throw Error("CUDA device 3 does not exist (1 visible)"); },
                 [&] {
                   checked = true;
                   return std::string();
                 },
                 [&](const std::string& r) { failures.add(r); }, 1ms);
    ASSERT_TRUE(failures.wait_for(1));
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_NE(failures.reasons[0].find("could not start: CUDA device 3"), std::string::npos)
      << failures.reasons[0];
  EXPECT_FALSE(checked);
}

TEST(Watchdog, SetupAndChecksRunOnTheWatchdogsOwnThread) {
  std::thread::id setup_thread, check_thread;
  std::atomic<bool> checked{false};
  {
    Watchdog dog([&] { setup_thread = std::this_thread::get_id(); },
                 [&] {
                   check_thread = std::this_thread::get_id();
                   checked = true;
                   return std::string();
                 },
                 [](const std::string&) {}, 1ms);
    const auto deadline = std::chrono::steady_clock::now() + 10s * testing::kSlowdown;
    while (!checked && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(checked);
  EXPECT_EQ(setup_thread, check_thread);
  EXPECT_NE(setup_thread, std::this_thread::get_id());
}

TEST(Watchdog, APokeReachesFailFromTheWatchdogsThreadAndTheFirstReasonWins) {
  Failures failures;
  std::mutex held_by_the_poker;  // what the NCCL backend's start() holds when it pokes
  {
    Watchdog dog(
        {}, [] { return std::string(); },
        [&](const std::string& r) {
          std::lock_guard<std::mutex> lock(held_by_the_poker);
          failures.add(r);
        },
        1h);  // no periodic check: only the poke can wake it
    {
      std::lock_guard<std::mutex> lock(held_by_the_poker);
      dog.poke("NCCL: unhandled system error");
      dog.poke("a second reason");
    }
    ASSERT_TRUE(failures.wait_for(1));
  }
  EXPECT_EQ(failures.reasons[0], "NCCL: unhandled system error");
  EXPECT_NE(failures.threads[0], std::this_thread::get_id());
}

TEST(Watchdog, ACheckThatNamesAProblemFailsEveryTimeItDoes) {
  Failures failures;
  {
    Watchdog dog(
        {}, [] { return std::string("all_reduce #7 passed the group's timeout"); },
        [&](const std::string& r) { failures.add(r); }, 1ms);
    ASSERT_TRUE(failures.wait_for(2));
  }
  EXPECT_EQ(failures.reasons[0], "all_reduce #7 passed the group's timeout");
}

}  // namespace
}  // namespace loom::dist
