// DistributedDataParallel over NCCL with one rank thread per GPU (spawn), 2, 4 and 8 ranks as
// the machine allows: N ranks of batch b train as one rank of batch N*b (ddp_test.cpp's
// tolerances), every rank's parameters equal rank 0's bit for bit after every step, buckets are
// all-reduced from backward's hooks; eagerly and as captured steps (train::CapturedStep with
// its group: review F5/F12), and a step where one rank's batch shape differs runs eagerly on
// every rank instead of hanging or pairing a replay with an eager step.
#include <gtest/gtest.h>

#include <chrono>

#include "nccl_cases.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kSteps = 10;
constexpr int64_t kPerRank = 4;

void expect_equivalent(const std::vector<NcclRun>& ranks, const TrainedRun& single) {
  const NcclRun& r0 = ranks[0];
  ASSERT_EQ(r0.losses.size(), single.losses.size());
  for (size_t s = 0; s < single.losses.size(); ++s) {
    EXPECT_NEAR(r0.losses[s], single.losses[s], 1e-5 * std::abs(single.losses[s])) << "step " << s;
  }
  EXPECT_LE(worst_relative(r0.gradients, single.gradients), 1e-5);
  EXPECT_LE(worst_relative(r0.parameters, single.parameters), 1e-5);
  for (size_t r = 0; r < ranks.size(); ++r) {
    EXPECT_EQ(ranks[r].differing_steps, 0) << "rank " << r;
    EXPECT_EQ(ranks[r].parameters, r0.parameters) << "rank " << r;
    // Several buckets, most of them started by the gradient hooks while backward still ran.
    EXPECT_GE(ranks[r].buckets, 3) << "rank " << r;
    EXPECT_GT(ranks[r].launched_during_backward, 0) << "rank " << r;
  }
}

std::vector<NcclRun> train_spawned(int world, const EquivalenceData& data, const NcclTraining& t) {
  std::vector<NcclRun> ranks(static_cast<size_t>(world));
  dist::SpawnOptions options;
  options.group.timeout = 60s;  // a hang fails the test within CTest's 120 s
  dist::spawn(
      world, kCUDA,
      [&](dist::ProcessGroup& g) {
        ranks[static_cast<size_t>(g.rank())] = train_nccl_rank(g, data, t);
      },
      options);
  return ranks;
}

class DdpNccl : public ::testing::TestWithParam<int> {};

TEST_P(DdpNccl, NRanksOfBatchBEqualOneRankOfBatchNB) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);  // batches of b and N*b may pick other algorithms
  const EquivalenceData data = equivalence_data(kPerRank * world * kSteps, 61);
  const TrainedRun single = train_single(data, kPerRank * world, kSteps, kCUDA);
  NcclTraining t;
  t.per_rank = kPerRank;
  t.steps = kSteps;
  expect_equivalent(train_spawned(world, data, t), single);
}

TEST_P(DdpNccl, CapturedStepsWithTheirGroupEqualOneRankOfBatchNB) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);
  const EquivalenceData data = equivalence_data(kPerRank * world * kSteps, 62);
  const TrainedRun single = train_single(data, kPerRank * world, kSteps, kCUDA);
  NcclTraining t;
  t.mode = StepMode::Captured;
  t.per_rank = kPerRank;
  t.steps = kSteps;
  const std::vector<NcclRun> ranks = train_spawned(world, data, t);
  expect_equivalent(ranks, single);
  for (size_t r = 0; r < ranks.size(); ++r) {
    // One eager warm-up step, then a capture that replays, then replays.
    EXPECT_EQ(ranks[r].eager_steps, 1) << "rank " << r;
    EXPECT_EQ(ranks[r].replays, kSteps - 1) << "rank " << r;
  }
}

// F5: the capture/replay/eager decision is taken together. At step 6 rank 1 has one sample
// fewer: every rank runs that step eagerly (none replays against rank 1's eager collectives),
// nothing hangs or throws, and the replays go on afterwards, the ranks still identical.
TEST_P(DdpNccl, ABatchShapeThatDiffersOnOneRankRunsThatStepEagerlyOnEveryRank) {
  const int world = GetParam();
  LOOM_REQUIRE_GPUS(world);
  const EquivalenceData data = equivalence_data(kPerRank * world * kSteps, 63);
  NcclTraining t;
  t.mode = StepMode::Captured;
  t.per_rank = kPerRank;
  t.steps = kSteps;
  t.odd_step = 6;
  t.odd_rank = world - 1;  // not rank 0, whose parameters the others are compared with
  const auto start = std::chrono::steady_clock::now();
  const std::vector<NcclRun> ranks = train_spawned(world, data, t);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s);
  for (size_t r = 0; r < ranks.size(); ++r) {
    EXPECT_EQ(ranks[r].differing_steps, 0) << "rank " << r;
    EXPECT_EQ(ranks[r].parameters, ranks[0].parameters) << "rank " << r;
    // Step 0 (warm-up) and step 6 (the shapes differ) eager, the other eight replayed.
    EXPECT_EQ(ranks[r].eager_steps, 2) << "rank " << r;
    EXPECT_EQ(ranks[r].replays, kSteps - 2) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DdpNccl, ::testing::Values(2, 4, 8));

}  // namespace
}  // namespace loom::testing
