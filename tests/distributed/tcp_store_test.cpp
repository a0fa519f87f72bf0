// TcpStore in one process: rank 0's server and the other ranks' clients on threads. Values,
// blocking gets, timeouts naming the key, and every failure ending in an error, never a hang:
// a rank that drops without a goodbye, rank 0 going away, nothing listening, a bad address.
#include "loom/distributed/tcp_store.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "testing.h"

namespace loom::dist {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Far longer than anything here takes; a wait that reaches it is a bug being reported, not a
// race being lost. Scaled for a sanitizer build, but inside CTest's 120 s: bounds below are
// fractions of it.
constexpr milliseconds kStoreLong = testing::scaled(milliseconds(30000), milliseconds(100000));

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A port with nothing listening: bound once by the system's choice, then released.
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t length = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Rank 0 (the server, on a port the system picks) and clients for ranks 1..world_size-1.
struct StoreJob {
  std::vector<std::unique_ptr<TcpStore>> ranks;
  StoreJob(int world_size, milliseconds timeout = kStoreLong) {
    ranks.push_back(std::make_unique<TcpStore>("127.0.0.1", 0, 0, world_size, timeout));
    for (int r = 1; r < world_size; ++r) {
      ranks.push_back(
          std::make_unique<TcpStore>("127.0.0.1", ranks[0]->port(), r, world_size, timeout));
    }
  }
  // The clients leave first, so rank 0's wait for their goodbyes ends at once.
  ~StoreJob() {
    while (!ranks.empty()) ranks.pop_back();
  }
  TcpStore& operator[](int r) { return *ranks[r]; }
};

TEST(TcpStore, SetGetAddEraseAcrossRanks) {
  StoreJob job(3);
  job[1].set("greeting", "hello from 1");
  EXPECT_EQ(job[2].get("greeting", kStoreLong), "hello from 1");
  EXPECT_EQ(job[0].get("greeting", kStoreLong), "hello from 1");
  job[2].set("greeting", "overwritten by 2");
  EXPECT_EQ(job[1].get("greeting", kStoreLong), "overwritten by 2");

  EXPECT_EQ(job[0].add("count", 5), 5);
  EXPECT_EQ(job[1].add("count", -2), 3);
  EXPECT_EQ(job[2].add("count", 10), 13);
  EXPECT_EQ(job[0].get("count", kStoreLong), "13");  // add keeps a decimal text, readable by get

  job[1].erase("greeting");
  EXPECT_LOOM_ERROR(job[2].get("greeting", milliseconds(50)), "get(\"greeting\")");
  job[1].erase("never-set");                // erasing what is absent is no error
  EXPECT_EQ(job[1].add("greeting", 1), 1);  // an erased key counts from 0 again
}

TEST(TcpStore, EmptyAndBinaryAndLargeValuesRoundTrip) {
  StoreJob job(2);
  job[0].set("empty", "");
  EXPECT_EQ(job[1].get("empty", kStoreLong), "");
  std::string binary(8 << 20, '\0');  // 8 MiB: collectives carry tensors through the store
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 2654435761u) >> 13);
  job[1].set("big", binary);
  EXPECT_TRUE(job[0].get("big", kStoreLong) == binary);
}

TEST(TcpStore, GetWaitsForAnotherRanksSet) {
  StoreJob job(2);
  auto got = std::async(std::launch::async, [&] { return job[1].get("late", kStoreLong); });
  job[0].set("late", "value");
  EXPECT_EQ(got.get(), "value");
}

TEST(TcpStore, ASetOnOneThreadIsNotHeldUpByAGetOnAnother) {
  // The TCP group's abort sets a key while its worker may wait in a get on the same store.
  StoreJob job(2);
  auto got = std::async(std::launch::async, [&] { return job[1].get("same-client", kStoreLong); });
  job[1].set("same-client", "from the other thread");
  EXPECT_EQ(got.get(), "from the other thread");
}

TEST(TcpStore, GetTimeoutNamesTheKeyAndTheStoreStillWorksAfter) {
  StoreJob job(2);
  const auto t0 = Clock::now();
  EXPECT_LOOM_ERROR(job[1].get("nobody-sets-this", milliseconds(100)),
                    "get(\"nobody-sets-this\") timed out after 100 ms");
  EXPECT_GE(seconds_since(t0), 0.1);
  // The abandoned get's reply, should the server still send one, must not answer a later request.
  job[0].set("nobody-sets-this", "now set");
  job[0].set("other", "other value");
  EXPECT_EQ(job[1].get("other", kStoreLong), "other value");
  EXPECT_EQ(job[1].get("nobody-sets-this", kStoreLong), "now set");
}

TEST(TcpStore, AddOnAValueThatIsNotAnIntegerFails) {
  StoreJob job(2);
  job[0].set("text", "abc");
  EXPECT_LOOM_ERROR(job[1].add("text", 1), "not a decimal integer");
  EXPECT_EQ(job[1].add("number", 2), 2);  // the failed request leaves the connection usable
}

TEST(TcpStore, ARankDroppingWithoutGoodbyeFailsEveryGetAtOnce) {
  StoreJob job(3);
  job[1].set("present", "x");
  auto pending = std::async(std::launch::async, [&] {
    try {
      job[2].get("never-set", kStoreLong);
      return std::string("returned");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  const auto t0 = Clock::now();
  job[1].drop_connection_for_testing();  // as if rank 1's process had been killed
  const std::string message = pending.get();
  EXPECT_NE(message.find("rank 1 disconnected"), std::string::npos) << message;
  EXPECT_LT(seconds_since(t0), kStoreLong.count() / 2000.0) << "the failure came by timeout";
  // Later gets fail at once with the same reason, even of keys that are present.
  EXPECT_LOOM_ERROR(job[0].get("present", kStoreLong), "rank 1 disconnected");
  EXPECT_LOOM_ERROR(job[2].get("present", kStoreLong), "rank 1 disconnected");
  job[0].set("still", "settable");  // the server itself still runs: the failure is the job's
}

TEST(TcpStore, AGoodbyeIsNotAFailure) {
  StoreJob job(3);
  job.ranks[2].reset();  // rank 2 leaves cleanly
  job[1].set("after", "fine");
  EXPECT_EQ(job[0].get("after", kStoreLong), "fine");
  EXPECT_LOOM_ERROR(job[1].get("missing", milliseconds(50)), "timed out");
}

TEST(TcpStore, RankZeroGoingAwayFailsTheOthersAtOnce) {
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, 0, 2, milliseconds(200));
  TcpStore client("127.0.0.1", server->port(), 1, 2, kStoreLong);
  auto pending = std::async(std::launch::async, [&] {
    try {
      client.get("never-set", kStoreLong);
      return std::string("returned");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  // Rank 0 waits its 200 ms for rank 1's goodbye, which does not come, then stops serving.
  server.reset();
  const std::string message = pending.get();
  EXPECT_NE(message.find("closed the connection"), std::string::npos) << message;
  EXPECT_LOOM_ERROR(client.set("k", "v"), "closed the connection");
}

TEST(TcpStore, NothingListeningFailsWithinTheTimeoutNamingEverything) {
  const int port = unused_port();
  const auto t0 = Clock::now();
  try {
    TcpStore client("127.0.0.1", port, 1, 2, milliseconds(300));
    ADD_FAILURE() << "connected to a port nobody listens on";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1 of 2"), std::string::npos) << m;
    EXPECT_NE(m.find("300 ms"), std::string::npos) << m;
    EXPECT_NE(m.find("refused"), std::string::npos) << m;
  }
  EXPECT_GE(seconds_since(t0), 0.3);  // it kept retrying: rank 0 may start after the others
  EXPECT_LT(seconds_since(t0), std::min(20.0 * testing::kSlowdown, 100.0));
}

TEST(TcpStore, AnUnresolvableHostFailsWithinTheTimeout) {
  // .invalid is reserved (RFC 6761): no resolver may answer it.
  EXPECT_LOOM_ERROR(TcpStore("no-such-host.invalid", 29500, 1, 2, milliseconds(200)),
                    "cannot resolve 'no-such-host.invalid'");
}

TEST(TcpStore, TwoProcessesWithOneRankOrDisagreeingWorldSizesAreRefused) {
  StoreJob job(3);
  EXPECT_LOOM_ERROR(TcpStore("127.0.0.1", job[0].port(), 1, 3, kStoreLong), "already connected");
  EXPECT_LOOM_ERROR(TcpStore("127.0.0.1", job[0].port(), 1, 4, kStoreLong),
                    "started the store for 3");
}

TEST(TcpStore, BadArgumentsAreRefusedBeforeAnyConnection) {
  EXPECT_LOOM_ERROR(TcpStore("127.0.0.1", 29500, 2, 2, kStoreLong), "rank 2 is outside [0, 2)");
  EXPECT_LOOM_ERROR(TcpStore("127.0.0.1", 0, 1, 2, kStoreLong), "only rank 0 may ask for port 0");
  EXPECT_LOOM_ERROR(TcpStore("127.0.0.1", 29500, 0, 2, milliseconds(0)),
                    "timeout must be positive");
}

}  // namespace
}  // namespace loom::dist
