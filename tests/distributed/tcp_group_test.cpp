// The "tcp" backend (make_store_group) in one process, one thread per rank: every collective in
// closed form, aborts and timeouts that name their cause, mismatched collectives caught with or
// without check_collectives, and store keys that do not pile up.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "loom/distributed/store_group.h"
#include "loom/distributed/tcp_store.h"
#include "testing.h"
#include "worker/collective_checks.h"

namespace loom::dist {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Scaled for a sanitizer build, but inside CTest's 120 s: the bounds below are fractions of it.
constexpr milliseconds kLong = testing::scaled(milliseconds(30000), milliseconds(100000));

GroupOptions with_timeout(milliseconds timeout, bool check = false) {
  GroupOptions o;
  o.timeout = timeout;
  o.check_collectives = check;
  return o;
}

// The groups of one job over TcpStores on loopback; rank 0 serves on a port the system picks.
struct TcpJob {
  std::vector<std::shared_ptr<TcpStore>> stores;
  std::vector<GroupPtr> groups;
  TcpJob(int n, const GroupOptions& options) {
    for (int r = 0; r < n; ++r) {
      const int port = r == 0 ? 0 : stores[0]->port();
      stores.push_back(std::make_shared<TcpStore>("127.0.0.1", port, r, n, kLong));
      groups.push_back(make_store_group(stores.back(), r, n, options));
    }
  }
  // The groups first (they hold the stores), then the clients before rank 0, whose wait for
  // their goodbyes then ends at once.
  ~TcpJob() {
    groups.clear();
    while (!stores.empty()) stores.pop_back();
  }
};

// Runs fn on a thread per rank; returns each rank's error message, "" where it returned.
std::vector<std::string> on_every_rank(const std::vector<GroupPtr>& groups,
                                       const std::function<void(ProcessGroup&)>& fn) {
  std::vector<std::string> errors(groups.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < groups.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(*groups[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

class TcpGroup : public ::testing::TestWithParam<int> {};

TEST_P(TcpGroup, EveryCollectiveOnEveryDtypeMatchesTheClosedForm) {
  TcpJob job(GetParam(), with_timeout(kLong));
  EXPECT_STREQ(job.groups[0]->backend(), "tcp");
  std::vector<std::vector<std::string>> wrong(job.groups.size());
  const auto errors = on_every_rank(
      job.groups, [&](ProcessGroup& g) { wrong[g.rank()] = testing::check_every_collective(g); });
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    for (const std::string& w : wrong[r]) ADD_FAILURE() << "rank " << r << ": " << w;
  }
}

TEST_P(TcpGroup, SumsAreBitIdenticalOnEveryRank) {
  // Values whose float sum depends on the order: every rank must fold in the same (rank) order.
  const int n = GetParam();
  TcpJob job(n, with_timeout(kLong));
  std::vector<std::vector<float>> results(n);
  const auto errors = on_every_rank(job.groups, [&](ProcessGroup& g) {
    std::vector<float> x(1000);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = 1.0f / float(1 + i + 7 * g.rank()) * (g.rank() % 2 ? 1e4f : 1e-3f);
    Tensor t = from_vector(x);
    g.all_reduce(t, ReduceOp::Avg)->wait();
    results[g.rank()] = t.to_vector<float>();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(errors[r], "");
    EXPECT_TRUE(results[r] == results[0]) << "rank " << r << " differs from rank 0";
  }
}

TEST_P(TcpGroup, AnAbortReachesTheOtherRanksNamingTheRankAndTheReason) {
  TcpJob job(GetParam(), with_timeout(kLong));
  const auto t0 = Clock::now();
  const auto errors = on_every_rank(job.groups, [&](ProcessGroup& g) {
    if (g.rank() == 1) g.abort("rank 1 gave up on purpose");
    g.all_reduce(ones({4}))->wait();
  });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kLong.count() / 2000.0)
      << "the others learned of the abort by timing out";
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_TRUE(contains(errors[r], "rank 1 gave up on purpose"))
        << "rank " << r << ": " << errors[r];
  }
  EXPECT_TRUE(contains(errors[1], "refused: the group was aborted")) << errors[1];
  EXPECT_TRUE(
      contains(errors[0], "rank 1 of " + std::to_string(GetParam()) + " (tcp) aborted the group"))
      << errors[0];
}

TEST_P(TcpGroup, ARankThatDropsFailsTheOthersCollectives) {
  TcpJob job(GetParam(), with_timeout(kLong));
  const auto errors = on_every_rank(job.groups, [&](ProcessGroup& g) {
    g.barrier()->wait();
    if (g.rank() == 1) {
      job.stores[1]->drop_connection_for_testing();  // as SIGKILL would
      return;
    }
    g.all_reduce(ones({4}))->wait();
  });
  for (size_t r = 0; r < errors.size(); ++r) {
    if (r == 1) continue;
    EXPECT_TRUE(contains(errors[r], "rank 1 disconnected")) << "rank " << r << ": " << errors[r];
  }
}

TEST_P(TcpGroup, DifferentCollectivesAreCaughtWithAndWithoutTheCheck) {
  for (bool check : {false, true}) {
    SCOPED_TRACE(check ? "check_collectives on" : "check_collectives off");
    TcpJob job(GetParam(), with_timeout(kLong, check));
    const auto errors = on_every_rank(job.groups, [&](ProcessGroup& g) {
      Tensor t = ones({5});
      if (g.rank() == 1) {
        g.broadcast(t, 0)->wait();
      } else {
        g.all_reduce(t)->wait();
      }
    });
    for (size_t r = 0; r < errors.size(); ++r) {
      EXPECT_TRUE(contains(errors[r], "collectives differ across ranks"))
          << "rank " << r << ": " << errors[r];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpGroup, ::testing::Values(2, 3));

TEST(TcpGroupTimeout, AMissingRankTimesOutNamingTheCollective) {
  TcpJob job(2, with_timeout(milliseconds(300)));
  const auto errors = on_every_rank(job.groups, [&](ProcessGroup& g) {
    if (g.rank() == 0) {
      g.all_reduce(ones({2}))->wait();  // rank 1 never joins it
    }
  });
  EXPECT_TRUE(contains(errors[0], "timed out")) << errors[0];
  EXPECT_TRUE(contains(errors[0], "all_reduce #0")) << errors[0];
  EXPECT_TRUE(job.groups[0]->is_aborted());  // a timeout leaves the ranks out of step
  EXPECT_EQ(errors[1], "");
}

TEST(TcpGroupTimeout, DestroyingAGroupWhoseCollectiveWaitsEndsPromptly) {
  auto job = std::make_unique<TcpJob>(2, with_timeout(kLong));
  WorkPtr work = job->groups[0]->all_reduce(ones({2}));  // rank 1 never joins it
  const auto t0 = Clock::now();
  job->groups[0].reset();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(seconds, kLong.count() / 3000.0) << "the worker waited for its deadline";
  EXPECT_LOOM_ERROR(work->wait(), "destroyed");
}

TEST(TcpGroupOfOne, RunsEveryCollectiveAlone) {
  auto store = std::make_shared<TcpStore>("127.0.0.1", 0, 0, 1, kLong);
  GroupPtr g = make_store_group(store, 0, 1, with_timeout(kLong));
  for (const std::string& w : testing::check_every_collective(*g)) ADD_FAILURE() << w;
}

// A store in memory that counts its keys, to watch how many a group leaves behind.
class CountingStore : public Store {
 public:
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
    ++sets_;
    changed_.notify_all();
  }
  std::string get(const std::string& key, milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    LOOM_CHECK(changed_.wait_for(lock, timeout, [&] { return values_.count(key) != 0; }),
               "CountingStore: get(\"", key, "\") timed out");
    return values_[key];
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t v = (values_.count(key) ? std::stoll(values_[key]) : 0) + delta;
    values_[key] = std::to_string(v);
    changed_.notify_all();
    return v;
  }
  void erase(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_.erase(key);
  }
  size_t keys() {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.size();
  }
  int64_t sets() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sets_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
  int64_t sets_ = 0;
};

TEST(TcpGroupKeys, OnlyTheLastRoundsKeysStay) {
  const int n = 3, rounds = 40;
  auto store = std::make_shared<CountingStore>();
  std::vector<GroupPtr> groups;
  for (int r = 0; r < n; ++r) groups.push_back(make_store_group(store, r, n, with_timeout(kLong)));
  const auto errors = on_every_rank(groups, [&](ProcessGroup& g) {
    for (int i = 0; i < rounds; ++i) {
      Tensor out = zeros({2});
      if (i % 2) {
        g.reduce_scatter(out, ones({2 * n}))->wait();  // n - 1 keys a rank
      } else {
        g.all_reduce(out)->wait();  // one key a rank
      }
    }
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  EXPECT_GE(store->sets(), int64_t{rounds} * n);
  // The n group counters, and each rank's keys of the last round (a reduce_scatter).
  EXPECT_EQ(store->keys(), size_t{n} + n * (n - 1));
}

}  // namespace
}  // namespace loom::dist
