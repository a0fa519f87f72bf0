// NCCL with one process per GPU, as torchrun starts them: nccl_worker processes (worker/
// nccl_worker.cpp) join through dist::init_from_environment(kCUDA) and the TCP store. DDP
// trains as one rank of the global batch, eager and captured, with every process on its own GPU
// only (F2); a different batch shape on one rank runs that step eagerly everywhere (F5); a rank
// that aborts fails the others within seconds through the store, naming it (F4), also while
// they wait for it to connect (F3); a stalled or dead peer fails a captured replay within the
// group's timeout (F6); a sticky CUDA error is an abort, not std::terminate (F9).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>

#include "nccl_cases.h"
#include "nccl_job.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kFailedAsExpected = 3;  // nccl_worker's exit codes
constexpr int kWorkerSteps = 10;      // NcclTraining's defaults, which the worker trains with
constexpr int64_t kWorkerPerRank = 4;

#ifdef LOOM_NCCL_WORKER
const char* const kWorker = LOOM_NCCL_WORKER;
#define LOOM_REQUIRE_NCCL_WORKER() \
  do {                             \
  } while (0)
#else
const char* const kWorker = "";
#define LOOM_REQUIRE_NCCL_WORKER() GTEST_SKIP() << "nccl_worker is built only with CUDA"
#endif

std::map<std::string, std::string> timeout_ms(int ms) {
  return {{"LOOM_DIST_TIMEOUT", std::to_string(ms / 1000.0)}};
}

// Every rank exited 0, reported its ranks identical after every step, several buckets started
// from backward's hooks, its loader's epoch delivered, and no CUDA context on any GPU but its
// own (after its watchdog and its loader's worker threads have run).
bool expect_clean_ddp_run(const std::vector<RankExit>& exits) {
  bool clean = true;
  for (const RankExit& e : exits) {
    clean = clean && e.exited_with(0);
    EXPECT_TRUE(e.exited_with(0)) << e.describe();
    EXPECT_EQ(e.value("differing_steps"), "0") << e.describe();
    EXPECT_GE(std::atoi(e.value("buckets").c_str()), 3) << e.describe();
    EXPECT_GT(std::atoi(e.value("launched_during_backward").c_str()), 0) << e.describe();
    EXPECT_EQ(e.value("loader_samples"), "64") << e.describe();  // its loader delivered an epoch
    EXPECT_EQ(e.value("own_context"), "1") << e.describe();  // else the check below sees nothing
    EXPECT_EQ(e.value("foreign_contexts"), "")
        << "rank " << e.rank << " has a CUDA primary context on these other GPUs\n"
        << e.describe();
  }
  return clean;
}

struct RankResult {
  std::vector<float> losses, gradients, parameters;
};

std::vector<RankResult> read_results(const NcclJob& job) {
  std::vector<RankResult> results;
  for (int r = 0; r < job.size(); ++r) {
    const io::TensorFile f =
        io::load_safetensors((job.dir() / ("rank" + std::to_string(r) + ".safetensors")).string());
    results.push_back({f.at("losses").to_vector<float>(), f.at("gradients").to_vector<float>(),
                       f.at("parameters").to_vector<float>()});
  }
  return results;
}

void expect_equivalent(const std::vector<RankResult>& ranks, int world) {
  // The reference after the job: the test holds no context on cuda:0 while rank 0 runs (a GPU
  // in EXCLUSIVE_PROCESS mode would refuse one of the two).
  DeterministicAlgorithmsGuard deterministic_guard;  // as the worker sets
  ConvTf32Scope full_float32(false);
  const EquivalenceData data =
      equivalence_data(kWorkerPerRank * world * kWorkerSteps, kProcessDataSeed);
  const TrainedRun single = train_single(data, kWorkerPerRank * world, kWorkerSteps, kCUDA);
  ASSERT_EQ(ranks[0].losses.size(), single.losses.size());
  for (size_t s = 0; s < single.losses.size(); ++s) {
    EXPECT_NEAR(ranks[0].losses[s], single.losses[s], 1e-5 * std::abs(single.losses[s]))
        << "step " << s;
  }
  EXPECT_LE(worst_relative(ranks[0].gradients, single.gradients), 1e-5);
  EXPECT_LE(worst_relative(ranks[0].parameters, single.parameters), 1e-5);
  for (size_t r = 1; r < ranks.size(); ++r)
    EXPECT_EQ(ranks[r].parameters, ranks[0].parameters) << "rank " << r;
}

class NcclProcesses : public ::testing::TestWithParam<int> {};

TEST_P(NcclProcesses, DdpEqualsOneRankAndEachProcessTouchesOnlyItsGpu) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "ddp", world, {"eager"}, timeout_ms(60000));
  if (!expect_clean_ddp_run(job.wait(100s))) return;
  expect_equivalent(read_results(job), world);
}

// Captured steps over processes (F12: NCCL's graph support with one GPU per process), with an
// eager all_reduce between the replays.
TEST_P(NcclProcesses, CapturedDdpStepsEqualOneRank) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "ddp", world, {"captured"}, timeout_ms(60000));
  const std::vector<RankExit> exits = job.wait(100s);
  if (!expect_clean_ddp_run(exits)) return;
  for (const RankExit& e : exits) {
    EXPECT_EQ(e.value("eager_steps"), "1") << e.describe();
    EXPECT_EQ(e.value("replays"), std::to_string(kWorkerSteps - 1)) << e.describe();
  }
  expect_equivalent(read_results(job), world);
}

// F5 across processes: at step 6 rank 1 has one sample fewer; every rank runs it eagerly.
TEST_P(NcclProcesses, ABatchShapeThatDiffersOnOneRankRunsThatStepEagerlyOnEveryRank) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "ddp", world, {"captured", "6"}, timeout_ms(30000));
  const std::vector<RankExit> exits = job.wait(100s);
  if (!expect_clean_ddp_run(exits)) return;
  for (const RankExit& e : exits) {
    EXPECT_EQ(e.value("eager_steps"), "2") << e.describe();
    EXPECT_EQ(e.value("replays"), std::to_string(kWorkerSteps - 2)) << e.describe();
  }
  const std::vector<RankResult> ranks = read_results(job);
  for (size_t r = 1; r < ranks.size(); ++r)
    EXPECT_EQ(ranks[r].parameters, ranks[0].parameters) << "rank " << r;
}

// F4: at step 3 rank 1's backward misses gradients, so DDP aborts its group. The others, waiting
// for rank 1's buckets on NVLink, must learn it through the store within seconds (their timeout
// is 60 s), name rank 1, and every process must exit, non-zero, within seconds.
void expect_rank1s_abort_reaches_everyone(int world, const std::vector<std::string>& args) {
  NcclJob job(kWorker, "throw-rank", world, args, timeout_ms(60000));
  const std::vector<RankExit> exits = job.wait(100s);
  const std::string threw = exits[1].value("threw_ns");
  ASSERT_FALSE(threw.empty()) << exits[1].describe();
  const Clock::time_point thrown = reported_time(threw);
  for (const RankExit& e : exits) {
    EXPECT_TRUE(e.exited_with(kFailedAsExpected)) << e.describe();
    ASSERT_FALSE(e.value("failed_ns").empty()) << e.describe();
    EXPECT_NE(e.value("error").find("rank 1 of " + std::to_string(world)), std::string::npos)
        << e.describe();
    EXPECT_LT(seconds_from(thrown, reported_time(e.value("failed_ns"))), 15.0) << e.describe();
    EXPECT_LT(seconds_from(thrown, e.ended), 15.0)
        << "rank " << e.rank << " exited " << seconds_from(thrown, e.ended)
        << " s after rank 1 threw";
  }
}

TEST_P(NcclProcesses, ARankThatAbortsFailsTheOthersThroughTheStoreNamingIt) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  expect_rank1s_abort_reaches_everyone(world, {});
}

// The same when rank 1 ends its process right after aborting, without the store's goodbye (a
// crash, or a launcher killing it): the store then knows the job has failed, and the others
// must still read rank 1's reason, or at least fail at once, not at their timeout.
TEST_P(NcclProcesses, ARankThatAbortsAndEndsAtOnceStillFailsTheOthersNamingIt) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  expect_rank1s_abort_reaches_everyone(world, {"die"});
}

// F3 across processes: rank 1 aborts while rank 0 is inside its first all_gather, whose
// connections wait for rank 1. The abort reaches rank 0 only through the store (its watchdog
// reads it), while rank 0's thread is in NCCL's enqueue: it must fail in seconds, not at its
// 120 s timeout.
TEST_P(NcclProcesses, AnAbortWhileThePeersConnectFailsTheirFirstCollectiveInSeconds) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "abort-before-connect", world, {}, timeout_ms(120000));
  const std::vector<RankExit> exits = job.wait(40s);  // below CTest's 120 s and the group's timeout
  const std::string threw = exits[1].value("threw_ns");
  ASSERT_FALSE(threw.empty()) << exits[1].describe();
  for (const RankExit& e : exits) {
    ASSERT_FALSE(e.killed_at_deadline) << e.describe();
    ASSERT_FALSE(e.value("failed_ns").empty()) << e.describe();
    EXPECT_LT(seconds_from(reported_time(threw), reported_time(e.value("failed_ns"))), 10.0)
        << e.describe();
    // A loom::Error (code 3: naming rank 1's reason; 4: another one, such as NCCL's report of
    // rank 1's closed connections, which may come first), not a crash.
    EXPECT_TRUE(e.exited_with(kFailedAsExpected) || e.exited_with(kFailedAsExpected + 1))
        << e.describe();
    if (e.exited_with(kFailedAsExpected + 1)) {
      std::cout << "[ note ] rank " << e.rank
                << " failed without rank 1's reason: " << e.value("error") << "\n";
    }
  }
}

// F6: rank 1 is stopped (SIGSTOP) once the captured steps replay. The steps skip the per-step
// shape agreement (ranks_share_shapes: one fixed batch), so the others' next replay waits for
// rank 1 inside the graph while their hosts wait for it (item()), with no collective of theirs
// in flight: the replay's watch (ProcessGroup::watch_stream) must fail them within the group's
// 10 s timeout, naming the replay. Then rank 1 is killed and everything reaped.
TEST_P(NcclProcesses, AStalledPeerFailsTheOthersCapturedStepsWithinTheTimeout) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "stall-replay", world, {}, timeout_ms(10000));
  const bool replaying = job.wait_for_progress(
      1,
      [](const std::map<std::string, std::string>& p) {
        return p.count("replays") != 0 && std::stoll(p.at("replays")) >= 3;
      },
      60s);
  ASSERT_TRUE(replaying) << job.wait(1s)[1].describe();
  job.signal(1, SIGSTOP);
  const Clock::time_point stopped = Clock::now();
  std::vector<int> others;
  for (int r = 0; r < world; ++r) {
    if (r != 1) others.push_back(r);
  }
  const std::vector<RankExit> exits = job.wait(60s, others);
  job.signal(1, SIGCONT);
  job.signal(1, SIGKILL);
  job.wait(10s, {1});
  for (int r : others) {
    const RankExit& e = exits[static_cast<size_t>(r)];
    EXPECT_FALSE(e.killed_at_deadline) << e.describe();
    ASSERT_FALSE(e.value("failed_ns").empty()) << e.describe();
    EXPECT_LT(seconds_from(stopped, reported_time(e.value("failed_ns"))), 40.0) << e.describe();
    EXPECT_NE(e.value("error").find("a captured step's replay"), std::string::npos) << e.describe();
    EXPECT_TRUE(e.exited_with(kFailedAsExpected)) << e.describe();
    EXPECT_LT(seconds_from(stopped, e.ended), 40.0) << e.describe();
  }
}

// F6 with the per-step agreement on: rank 1 dies (SIGKILL) right after launching a replay that
// takes tens of ms (it has agreed on the step's shape already), so the others' replay waits for
// an all-reduce that never comes while their hosts wait for the replay (item()), with no
// collective of their own in flight: only the replay's watch can end it. They must fail within
// the 10 s timeout, naming the replay.
TEST_P(NcclProcesses, APeerThatDiesMidReplayFailsTheOthersThroughTheReplaysWatch) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "die-mid-replay", world, {}, timeout_ms(10000));
  const std::vector<RankExit> exits = job.wait(90s);
  const RankExit& dead = exits[1];
  EXPECT_TRUE(!dead.exited && dead.signal == SIGKILL) << dead.describe();
  const std::string killed = dead.value("killed_ns");
  ASSERT_FALSE(killed.empty()) << dead.describe();
  for (const RankExit& e : exits) {
    if (e.rank == 1) continue;
    EXPECT_FALSE(e.killed_at_deadline) << e.describe();
    ASSERT_FALSE(e.value("failed_ns").empty()) << e.describe();
    EXPECT_NE(e.value("error").find("a captured step's replay"), std::string::npos) << e.describe();
    EXPECT_LT(seconds_from(reported_time(killed), reported_time(e.value("failed_ns"))), 40.0)
        << e.describe();
    EXPECT_TRUE(e.exited_with(kFailedAsExpected)) << e.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclProcesses, ::testing::Values(2, 4, 8));

// F9: a kernel of rank 1 faults (an illegal address: sticky, every later CUDA call of the
// process fails) ahead of a collective. Rank 1's watchdog must catch what its CUDA calls now
// throw and abort the group (rank 1 exits by its own code, not by SIGABRT from
// std::terminate); rank 0 learns it through the store and fails naming rank 1, long before
// its 60 s timeout.
TEST(NcclProcessFaults, AStickyCudaErrorOnOneRankIsAnAbortNotATerminate) {
  LOOM_REQUIRE_GPUS(2);
  LOOM_REQUIRE_NCCL_WORKER();
  NcclJob job(kWorker, "sticky-error", 2, {}, timeout_ms(60000));
  const std::vector<RankExit> exits = job.wait(60s);
  const RankExit& faulty = exits[1];
  EXPECT_TRUE(faulty.exited_with(kFailedAsExpected)) << faulty.describe();
  EXPECT_EQ(faulty.value("fault_launch"), "0") << faulty.describe();
  EXPECT_EQ(faulty.value("aborted"), "1") << faulty.describe();
  EXPECT_FALSE(faulty.value("abort_reason").empty()) << faulty.describe();
  EXPECT_FALSE(faulty.value("error").empty()) << faulty.describe();
  EXPECT_EQ(faulty.value("others_failed"), "1") << faulty.describe();
  const RankExit& peer = exits[0];
  EXPECT_TRUE(peer.exited_with(kFailedAsExpected)) << peer.describe();
  ASSERT_FALSE(faulty.value("fault_ns").empty()) << faulty.describe();
  ASSERT_FALSE(peer.value("failed_ns").empty()) << peer.describe();
  EXPECT_LT(
      seconds_from(reported_time(faulty.value("fault_ns")), reported_time(peer.value("failed_ns"))),
      10.0)
      << peer.describe();
}

}  // namespace
}  // namespace loom::testing
