// The TCP backend across processes: 2 and 4 dist_worker processes started with torchrun's
// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), each scenario judged by their exit
// codes (worker/dist_worker.cpp lists them). A hard deadline kills whatever is still running,
// so a hang fails the test instead of stalling it.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing.h"
#include "worker_environment.h"

extern char** environ;

#ifndef LOOM_DIST_WORKER
#error "LOOM_DIST_WORKER (the path of dist_worker) comes from tests/distributed/processes.cmake"
#endif

namespace loom::dist {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::free_tcp_port;
using testing::is_launcher_variable;

constexpr int kFailedAsExpected = 3, kJoinFailed = 6;  // dist_worker's exit codes
// Far above what any scenario takes when it works (scaled for a sanitizer build, as the workers
// are built with it too).
constexpr int kGroupTimeoutMs =
    static_cast<int>(testing::scaled(std::chrono::seconds(20), std::chrono::seconds(50)).count());
// Past this every worker still running is killed and the test fails: above the group timeout,
// so that a worker which times out reports so itself, and below CTest's 120 s.
constexpr std::chrono::milliseconds kHardDeadline =
    testing::scaled(std::chrono::seconds(60), std::chrono::seconds(100));

struct Exit {
  int rank = -1;
  bool exited = false;  // by exit(), with `code`
  int code = -1;
  int signal = 0;  // killed by this signal
  bool killed_at_deadline = false;
  std::string log;  // its stdout and stderr

  std::string describe() const {
    std::ostringstream s;
    s << "rank " << rank << ": ";
    if (killed_at_deadline) {
      s << "still running at the hard deadline (killed)";
    } else if (exited) {
      s << "exit code " << code;
    } else {
      s << "killed by signal " << signal;
    }
    return s.str() + "\n--- its output ---\n" + log;
  }
};

// Some ranks of one job, each a dist_worker process; the destructor kills and reaps whatever a
// failed assertion left running.
class LaunchJob {
 public:
  LaunchJob(const std::string& scenario, int world_size, const std::vector<int>& ranks,
            const std::map<std::string, std::string>& variables) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (!is_launcher_variable(entry.substr(0, entry.find('=')))) env.push_back(entry);
    }
    static int jobs = 0;
    const std::string stem =
        (fs::temp_directory_path() / ("loom_tcp_launch_" + std::to_string(::getpid()) + "_" +
                                      std::to_string(jobs++) + "_" + scenario))
            .string();
    for (int rank : ranks) {
      std::vector<std::string> mine = env;
      std::map<std::string, std::string> vars = {
          {"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(world_size)},
          {"OMP_NUM_THREADS", "1"},
          {"LOOM_DIST_TIMEOUT", std::to_string(kGroupTimeoutMs / 1000.0)}};
      for (const auto& [k, v] : variables) vars[k] = v;
      for (const auto& [k, v] : vars) mine.push_back(k + "=" + v);
      logs_.push_back(stem + "_rank" + std::to_string(rank) + ".log");
      spawn(scenario, mine, logs_.back());
      exits_.push_back(Exit{});
      exits_.back().rank = rank;
    }
  }

  ~LaunchJob() {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (!reaped_[i]) {
        ::kill(pids_[i], SIGKILL);
        ::waitpid(pids_[i], nullptr, 0);
      }
    }
    for (const std::string& log : logs_) fs::remove(log);
  }

  // Waits until every worker has ended, or kills those left at the hard deadline. The ranks in
  // `frozen` (stopped on purpose) are not waited for: once the others have ended they are
  // killed, and their Exit says SIGKILL.
  std::vector<Exit> wait(const std::vector<int>& frozen = {}) {
    const Clock::time_point deadline = Clock::now() + kHardDeadline;
    auto is_frozen = [&](size_t i) {
      return std::find(frozen.begin(), frozen.end(), exits_[i].rank) != frozen.end();
    };
    for (;;) {
      bool running = false;
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (reaped_[i] || is_frozen(i)) continue;
        int status = 0;
        if (::waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
          reaped_[i] = true;
          exits_[i].exited = WIFEXITED(status);
          exits_[i].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          exits_[i].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        } else {
          running = true;
        }
      }
      if (!running) {
        for (size_t i = 0; i < pids_.size(); ++i) {
          if (reaped_[i]) continue;
          ::kill(pids_[i], SIGKILL);
          ::waitpid(pids_[i], nullptr, 0);
          reaped_[i] = true;
          exits_[i].signal = SIGKILL;
        }
        break;
      }
      if (Clock::now() >= deadline) {
        for (size_t i = 0; i < pids_.size(); ++i) {
          if (reaped_[i]) continue;
          ::kill(pids_[i], SIGKILL);
          ::waitpid(pids_[i], nullptr, 0);
          reaped_[i] = true;
          exits_[i].killed_at_deadline = true;
        }
        break;
      }
      // Polling for the exits; the deadline above, not this pause, bounds the wait.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (size_t i = 0; i < logs_.size(); ++i) {
      std::ifstream in(logs_[i]);
      exits_[i].log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return exits_;
  }

 private:
  void spawn(const std::string& scenario, const std::vector<std::string>& env,
             const std::string& log) {
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    std::string program = LOOM_DIST_WORKER;
    std::vector<char*> argv = {program.data(), const_cast<char*>(scenario.c_str()), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc =
        ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    LOOM_CHECK(rc == 0, "posix_spawn ", program, ": ", std::strerror(rc));
    pids_.push_back(pid);
    reaped_.push_back(false);
  }

  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
  std::vector<Exit> exits_;
  std::vector<std::string> logs_;
};

std::vector<int> all_ranks(int n) {
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  return ranks;
}

std::map<std::string, std::string> on_loopback(int port) {
  return {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
}

class TcpLaunch : public ::testing::TestWithParam<int> {};

TEST_P(TcpLaunch, EveryCollectiveIsRightOnEveryRank) {
  LaunchJob job("collectives", GetParam(), all_ranks(GetParam()), on_loopback(free_tcp_port()));
  for (const Exit& e : job.wait()) EXPECT_TRUE(e.exited && e.code == 0) << e.describe();
}

TEST_P(TcpLaunch, AKilledRankFailsEveryOtherRank) {
  const auto t0 = Clock::now();
  LaunchJob job("kill-rank", GetParam(), all_ranks(GetParam()), on_loopback(free_tcp_port()));
  const std::vector<Exit> exits = job.wait();
  for (const Exit& e : exits) {
    if (e.rank == 1) {
      EXPECT_TRUE(!e.exited && e.signal == SIGKILL) << e.describe();
    } else {
      // Code 3: the error named "rank 1 disconnected", so the store's failure detection ended
      // the wait, not the group's timeout.
      EXPECT_TRUE(e.exited && e.code == kFailedAsExpected) << e.describe();
    }
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kGroupTimeoutMs / 1000.0);
}

TEST_P(TcpLaunch, AnAbortingRanksReasonReachesEveryRank) {
  LaunchJob job("throw-rank", GetParam(), all_ranks(GetParam()), on_loopback(free_tcp_port()));
  for (const Exit& e : job.wait()) {
    EXPECT_TRUE(e.exited && e.code == kFailedAsExpected) << e.describe();
    EXPECT_NE(e.log.find("threw on purpose"), std::string::npos) << e.describe();
  }
}

TEST_P(TcpLaunch, DifferentCollectivesFailOnEveryRank) {
  LaunchJob job("mismatch", GetParam(), all_ranks(GetParam()), on_loopback(free_tcp_port()));
  for (const Exit& e : job.wait()) {
    EXPECT_TRUE(e.exited && e.code == kFailedAsExpected) << e.describe();
    EXPECT_NE(e.log.find("collectives differ"), std::string::npos) << e.describe();
  }
}

TEST_P(TcpLaunch, AnErrorOutsideACollectiveReachesEveryRank) {
  const auto t0 = Clock::now();
  LaunchJob job("fail-outside", GetParam(), all_ranks(GetParam()), on_loopback(free_tcp_port()));
  for (const Exit& e : job.wait()) {
    EXPECT_TRUE(e.exited && e.code == kFailedAsExpected) << e.describe();
    EXPECT_NE(e.log.find("rank 1 ran out of disk"), std::string::npos) << e.describe();
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kGroupTimeoutMs / 2000.0);
}

// A stopped process keeps its sockets open: only the heartbeat, 2 s here against a group
// timeout of 20 s or more, tells the others.
std::map<std::string, std::string> with_heartbeat(int port) {
  auto vars = on_loopback(port);
  vars["LOOM_DIST_HEARTBEAT"] = "2";
  return vars;
}

TEST_P(TcpLaunch, AFrozenRankFailsTheOthersWithinTheHeartbeat) {
  const auto t0 = Clock::now();
  LaunchJob job("freeze-rank", GetParam(), all_ranks(GetParam()), with_heartbeat(free_tcp_port()));
  for (const Exit& e : job.wait({1})) {
    if (e.rank == 1) continue;  // stopped, then killed by the test
    EXPECT_TRUE(e.exited && e.code == kFailedAsExpected) << e.describe();
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kGroupTimeoutMs / 2000.0);
}

TEST_P(TcpLaunch, AFrozenStoreServerFailsTheOthersWithinTheHeartbeat) {
  const auto t0 = Clock::now();
  LaunchJob job("freeze-server", GetParam(), all_ranks(GetParam()),
                with_heartbeat(free_tcp_port()));
  for (const Exit& e : job.wait({0})) {
    if (e.rank == 0) continue;
    EXPECT_TRUE(e.exited && e.code == kFailedAsExpected) << e.describe();
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kGroupTimeoutMs / 2000.0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpLaunch, ::testing::Values(2, 4));

TEST(TcpLaunchRendezvous, ARankWithAnotherWorldSizeFailsTheJobAtOnce) {
  const int port = free_tcp_port();
  auto vars = on_loopback(port);
  LaunchJob rank0("collectives", 2, {0}, vars);
  vars["WORLD_SIZE"] = "3";  // a launcher's mistake
  LaunchJob rank1("collectives", 3, {1}, vars);
  const auto t0 = Clock::now();
  const Exit refused = rank1.wait().at(0);
  const Exit server = rank0.wait().at(0);
  EXPECT_TRUE(refused.exited && refused.code == kJoinFailed) << refused.describe();
  EXPECT_NE(refused.log.find("started the store for 2"), std::string::npos) << refused.describe();
  EXPECT_TRUE(server.exited && server.code != 0) << server.describe();
  EXPECT_NE(server.log.find("a rank was refused by the store"), std::string::npos)
      << server.describe();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), kGroupTimeoutMs / 2000.0);
}

TEST(TcpLaunchRendezvous, AProcessWithoutTheJobSecretCannotTakeARank) {
  const int port = free_tcp_port();
  auto vars = on_loopback(port);
  vars["LOOM_DIST_TOKEN"] = "secret-of-this-job";
  auto stranger_vars = vars;
  stranger_vars["LOOM_DIST_TOKEN"] = "a-guess";
  LaunchJob rank0("collectives", 2, {0}, vars);
  LaunchJob stranger("collectives", 2, {1}, stranger_vars);
  const Exit refused = stranger.wait().at(0);
  EXPECT_TRUE(refused.exited && refused.code == kJoinFailed) << refused.describe();
  EXPECT_NE(refused.log.find("LOOM_DIST_TOKEN"), std::string::npos) << refused.describe();
  // The job goes on: the real rank 1 joins and every collective is right.
  LaunchJob rank1("collectives", 2, {1}, vars);
  const Exit joined = rank1.wait().at(0);
  const Exit server = rank0.wait().at(0);
  EXPECT_TRUE(joined.exited && joined.code == 0) << joined.describe();
  EXPECT_TRUE(server.exited && server.code == 0) << server.describe();
}

TEST(TcpLaunchRendezvous, WithoutRankZeroARankFailsToJoinWithinItsTimeout) {
  const int port = free_tcp_port();
  auto vars = on_loopback(port);
  vars["LOOM_DIST_TIMEOUT"] = "1";
  LaunchJob job("collectives", 2, {1}, vars);  // rank 0, which would listen, never starts
  const Exit e = job.wait().at(0);
  EXPECT_TRUE(e.exited && e.code == kJoinFailed) << e.describe();
  const std::string expected =
      "could not connect to the store at 127.0.0.1:" + std::to_string(port) + " within 1000 ms";
  EXPECT_NE(e.log.find(expected), std::string::npos) << e.describe();
}

TEST(TcpLaunchRendezvous, AnUnreachableMasterAddrFailsEveryRankWithinItsTimeout) {
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): no host answers there.
  LaunchJob job("collectives", 2, {0, 1},
                {{"MASTER_ADDR", "192.0.2.1"},
                 {"MASTER_PORT", std::to_string(free_tcp_port())},
                 {"LOOM_DIST_TIMEOUT", "1"}});
  for (const Exit& e : job.wait()) {
    EXPECT_TRUE(e.exited && e.code == kJoinFailed) << e.describe();
    EXPECT_NE(e.log.find("192.0.2.1"), std::string::npos) << e.describe();
  }
}

}  // namespace
}  // namespace loom::dist
