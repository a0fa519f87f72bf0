// Faults on the threads backend end in errors on every rank, never in a hang: a rank that
// throws, a rank that never arrives, ranks that call different collectives, an abort, and bad
// arguments.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <limits>

#include "collective_cases.h"
#include "testing.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

dist::SpawnOptions with_timeout(std::chrono::milliseconds timeout) {
  dist::SpawnOptions options;
  options.group.timeout = timeout;
  return options;
}

std::string spawn_error(int world, const std::function<void(dist::ProcessGroup&)>& fn,
                        const dist::SpawnOptions& options = {}) {
  try {
    dist::spawn(world, kCPU, fn, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Faults, ARankThatThrowsFailsThePendingCollectivesOfTheOthers) {
  // The deadline is far: the others must fail because rank 1 threw, not by timing out.
  std::atomic<int> failed_fast{0};
  const std::string error = spawn_error(
      4,
      [&](dist::ProcessGroup& g) {
        if (g.rank() == 1) throw Error("the data of rank 1 ran out");
        Tensor t = ones({8});
        try {
          g.all_reduce(t)->wait();
        } catch (const Error& e) {
          const std::string what = e.what();
          if (what.find("rank 1 failed: the data of rank 1 ran out") != std::string::npos &&
              what.find("all_reduce #0") != std::string::npos) {
            ++failed_fast;
          }
          throw;
        }
      },
      with_timeout(10min));
  EXPECT_NE(error.find("spawn: rank 1 failed: the data of rank 1 ran out"), std::string::npos)
      << error;
  EXPECT_EQ(failed_fast.load(), 3);
}

TEST(Faults, ARankThatNeverArrivesIsATimeoutNamingTheCollective) {
  std::string rank0_error;
  const std::string error = spawn_error(
      2,
      [&](dist::ProcessGroup& g) {
        if (g.rank() == 1) return;  // never calls the collective
        Tensor t = ones({2, 3});
        try {
          g.all_reduce(t)->wait();
        } catch (const Error& e) {
          rank0_error = e.what();
          throw;
        }
      },
      with_timeout(300ms));
  for (const char* part : {"rank 0 of 2 (threads)", "all_reduce #0 (sum, float32 [2, 3])",
                           "timed out", "ranks [1] had not arrived"}) {
    EXPECT_NE(rank0_error.find(part), std::string::npos) << part << " not in: " << rank0_error;
  }
  EXPECT_NE(error.find("rank 0 failed"), std::string::npos) << error;
}

TEST(Faults, DifferentCollectivesOnTheRanksNameBothSides) {
  std::atomic<int> named_both{0};
  spawn_error(2, [&](dist::ProcessGroup& g) {
    Tensor t = ones({5});
    try {
      if (g.rank() == 0)
        g.all_reduce(t)->wait();
      else
        g.broadcast(t, 0)->wait();
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find(
              "collectives differ across ranks: rank 0 called all_reduce #0 (sum, float32 [5]) "
              "but rank 1 called broadcast #0 (root 0, float32 [5])") != std::string::npos) {
        ++named_both;
      }
    }
  });
  EXPECT_EQ(named_both.load(), 2);
}

TEST(Faults, DifferentSizesOnTheRanksAreAMismatch) {
  std::atomic<int> errors{0};
  spawn_error(3, [&](dist::ProcessGroup& g) {
    Tensor t = ones({g.rank() == 2 ? 4 : 3});
    try {
      g.all_reduce(t)->wait();
    } catch (const Error& e) {
      if (std::string(e.what()).find("rank 2 called all_reduce #0 (sum, float32 [4])") !=
          std::string::npos)
        ++errors;
    }
  });
  EXPECT_EQ(errors.load(), 3);
}

TEST(Faults, AnAbortedGroupRefusesLaterCollectivesOnEveryRank) {
  std::atomic<int> refused{0};
  spawn_error(2, [&](dist::ProcessGroup& g) {
    if (g.rank() == 0) g.abort("stopping early");
    try {
      while (true) g.barrier()->wait();  // ends once the abort reaches this rank
    } catch (const Error& e) {
      if (std::string(e.what()).find("stopping early") != std::string::npos) ++refused;
    }
    EXPECT_TRUE(g.is_aborted());
  });
  EXPECT_EQ(refused.load(), 2);
}

TEST(Faults, BadArgumentsAreClearErrors) {
  dist::spawn(2, kCPU, [](dist::ProcessGroup& g) {
    Tensor m = ones({3, 4});
    EXPECT_LOOM_ERROR(g.all_reduce(m.t()), "must be contiguous");
    EXPECT_LOOM_ERROR(g.all_reduce(Tensor()), "undefined");
    EXPECT_LOOM_ERROR(g.all_reduce(ones({3}, kInt64), dist::ReduceOp::Avg),
                      "avg needs a floating dtype");
    EXPECT_LOOM_ERROR(g.broadcast(m, 2), "root 2 is not a rank of a group of 2");
    EXPECT_LOOM_ERROR(g.all_gather(ones({5}), ones({3})), "need 6");
    EXPECT_LOOM_ERROR(g.all_gather(ones({6}, kInt32), ones({3})),
                      "output is int32 but input is float32");
    EXPECT_LOOM_ERROR(g.reduce_scatter(ones({2}), ones({3})), "need 4");
    Tensor both = ones({8});
    EXPECT_LOOM_ERROR(g.all_gather(both, both.narrow(0, 0, 4)), "overlap");
    g.barrier()->wait();  // nothing above reached the other rank
  });
}

TEST(Faults, SpawnRefusesBadWorldSizes) {
  EXPECT_LOOM_ERROR(dist::spawn(0, kCPU, [](dist::ProcessGroup&) {}),
                    "world size must be at least 1, got 0");
  const int gpus = cuda_device_count();
  if (built_with_cuda()) {
    EXPECT_LOOM_ERROR(
        dist::spawn(gpus + 1, kCUDA, [](dist::ProcessGroup&) {}),
        std::to_string(gpus + 1) + " GPUs but " + std::to_string(gpus) + " are visible");
  } else {
    EXPECT_LOOM_ERROR(dist::spawn(2, kCUDA, [](dist::ProcessGroup&) {}), "built without CUDA");
  }
  dist::SpawnOptions mpi;
  mpi.backend = dist::Backend::Mpi;
  EXPECT_LOOM_ERROR(dist::spawn(
                        2, kCPU, [](dist::ProcessGroup&) {}, mpi),
                    "must be threads or nccl");
}

// Issue 38 item 5: 1,000 thread ranks were accepted (10.5 GB), 2^31 - 1 ended in a bad_alloc
// naming nothing; a world size past max_thread_ranks() is an error naming it, before anything.
TEST(Faults, SpawnRefusesMoreThreadRanksThanTheMachineHolds) {
  const int most = dist::max_thread_ranks();
  EXPECT_GE(most, 8);
  EXPECT_LE(most, 1024);
  for (int world : {most + 1, std::numeric_limits<int>::max()}) {
    EXPECT_LOOM_ERROR(dist::spawn(world, kCPU, [](dist::ProcessGroup&) { ADD_FAILURE(); }),
                      "a world size of " + std::to_string(world) +
                          " is more thread ranks than this machine can hold: at most " +
                          std::to_string(most));
  }
}

// A thread the system refuses (here: no address space left for its stack) ended in
// std::terminate; now the ranks started are aborted and spawn throws naming the world size. In
// a child process, whose address space limit the test lowers.
TEST(Faults, AThreadTheSystemRefusesIsAnErrorNamingTheWorldSize) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory needs more address space than the test leaves";
#else
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // What is mapped now and 48 MB more: a few 8 MB thread stacks, not 16.
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max =
        static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (48u << 20);
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
    try {
      dist::spawn(16, kCPU, [](dist::ProcessGroup& g) { g.barrier()->wait(); });
    } catch (const Error& e) {
      const std::string what = e.what();
      ::_exit(what.find("of a world size of 16") != std::string::npos ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(4);  // every thread started: the limit was not low enough
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: another error, 2: not a loom::Error, 4: no failure";
#endif
}

TEST(Faults, AWorkWaitedTwiceThrowsTwice) {
  spawn_error(
      2,
      [&](dist::ProcessGroup& g) {
        if (g.rank() == 1) return;
        dist::WorkPtr w = g.barrier();
        EXPECT_THROW(w->wait(), Error);
        EXPECT_THROW(w->wait(), Error);
        EXPECT_TRUE(w->is_failed());
      },
      with_timeout(100ms));
}

}  // namespace
}  // namespace loom::testing
