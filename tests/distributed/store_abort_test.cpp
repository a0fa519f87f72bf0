// StoreAbortSignal: an abort that reaches the job's other processes through its rendezvous
// store (finding F4: NCCL's abort ends only this process's kernels). Ranks here are TcpStore
// clients on threads of one process, talking to rank 0's server over loopback, as processes do.
#include "loom/distributed/store_abort.h"

#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "loom/distributed/tcp_store.h"
#include "testing.h"

namespace loom::dist {
namespace {

using namespace std::chrono_literals;

struct AbortJob {
  std::vector<std::shared_ptr<TcpStore>> ranks;
  explicit AbortJob(int world_size) {
    const std::chrono::milliseconds timeout = testing::scaled(30s, 100s);
    ranks.push_back(std::make_shared<TcpStore>("127.0.0.1", 0, 0, world_size, timeout));
    for (int r = 1; r < world_size; ++r) {
      ranks.push_back(
          std::make_shared<TcpStore>("127.0.0.1", ranks[0]->port(), r, world_size, timeout));
    }
  }
  ~AbortJob() {
    while (!ranks.empty()) ranks.pop_back();  // clients first: rank 0 then stops at once
  }
};

TEST(StoreAbortSignal, ARankThatAbortsIsSeenByEveryOtherRank) {
  AbortJob job(3);
  StoreAbortSignal r0(job.ranks[0]), r1(job.ranks[1]), r2(job.ranks[2]);
  EXPECT_FALSE(r0.poll().has_value());
  EXPECT_FALSE(r2.poll().has_value());
  r1.raise("rank 1 of 3 (nccl)", "DistributedDataParallel: backward gave no gradient to 'fc.bias'");
  for (StoreAbortSignal* s : {&r0, &r2, &r1}) {
    const std::optional<std::string> news = s->poll();
    ASSERT_TRUE(news.has_value());
    EXPECT_EQ(*news,
              "rank 1 of 3 (nccl) aborted: DistributedDataParallel: backward gave no gradient to "
              "'fc.bias'");
  }
}

TEST(StoreAbortSignal, TheFirstReasonIsKept) {
  AbortJob job(2);
  StoreAbortSignal r0(job.ranks[0]), r1(job.ranks[1]);
  r1.raise("rank 1 of 2 (nccl)", "the loader ran dry");
  r0.raise("rank 0 of 2 (nccl)", "through the store: rank 1 aborted");
  EXPECT_EQ(*r0.poll(), "rank 1 of 2 (nccl) aborted: the loader ran dry");
}

TEST(StoreAbortSignal, ASignalRaisedOnOneThreadIsSeenByAPollerOnAnother) {
  AbortJob job(2);
  StoreAbortSignal watcher(job.ranks[0]), failing(job.ranks[1]);
  std::optional<std::string> seen;
  std::thread poller([&] {
    const auto deadline = std::chrono::steady_clock::now() + testing::scaled(20s, 100s);
    while (!seen && std::chrono::steady_clock::now() < deadline) {
      seen = watcher.poll();
      std::this_thread::sleep_for(1ms);
    }
  });
  std::this_thread::sleep_for(10ms);
  failing.raise("rank 1 of 2 (nccl)", "an illegal memory access");
  poller.join();
  ASSERT_TRUE(seen.has_value());
  EXPECT_NE(seen->find("an illegal memory access"), std::string::npos);
}

// A store whose server is gone: every call throws, as TcpStore's do then.
class DeadStore : public Store {
 public:
  void set(const std::string&, const std::string&) override { throw Error("connection reset"); }
  std::string get(const std::string&, std::chrono::milliseconds) override {
    throw Error("connection reset");
  }
  int64_t add(const std::string&, int64_t) override {
    ++calls;
    throw Error("connection reset");
  }
  void erase(const std::string&) override { throw Error("connection reset"); }
  int calls = 0;
};

TEST(StoreAbortSignal, AStoreThatFailsItsCallsIsNewsOnceAndNeverThrows) {
  // A TcpStore fails every call once it knows the job has failed (a rank dropped without a
  // goodbye) or its server, rank 0, is gone: a peer is gone either way.
  auto store = std::make_shared<DeadStore>();
  StoreAbortSignal signal(store);
  const std::optional<std::string> news = signal.poll();
  ASSERT_TRUE(news.has_value());
  EXPECT_EQ(*news, "the job's store failed: connection reset");
  const int calls = store->calls;
  EXPECT_FALSE(signal.poll().has_value());
  EXPECT_EQ(store->calls, calls) << "a dead store is not asked again at every watchdog tick";
  EXPECT_NO_THROW(signal.raise("rank 0 of 2 (nccl)", "anything"));
}

TEST(StoreAbortSignal, TheReasonOutlivesTheSignalThatRaisedIt) {
  // What a rank wrote stays in the store once that rank's part is gone (a rank that aborts
  // then exits); a store that then fails its calls is the test above.
  AbortJob job(2);
  StoreAbortSignal watcher(job.ranks[0]);
  {
    StoreAbortSignal failing(job.ranks[1]);
    failing.raise("rank 1 of 2 (nccl)", "a loader ran dry");
  }
  const std::optional<std::string> news = watcher.poll();
  ASSERT_TRUE(news.has_value());
  EXPECT_NE(news->find("rank 1 of 2 (nccl) aborted: a loader ran dry"), std::string::npos) << *news;
}

}  // namespace
}  // namespace loom::dist
