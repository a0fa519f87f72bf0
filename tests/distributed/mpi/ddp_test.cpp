// DistributedDataParallel across processes under mpirun (-np 2 and 4): the same equivalence
// with one rank of N times the batch as the thread ranks of ddp_test.cpp.
#include <gtest/gtest.h>

#include "distributed/ddp_cases.h"
#include "mpi_testing.h"

namespace loom::testing {
namespace {

TEST(MpiDdp, NProcessesOfBatchBEqualOneRankOfBatchNB) {
  dist::GroupPtr group = fresh_group();
  const int world = group->size();
  const int64_t global = 4 * world;
  const int steps = 10;
  // Every process makes the same data from the same seed, and the one-rank run itself.
  const EquivalenceData data = equivalence_data(global * steps, 21);
  const TrainedRun single = train_single(data, global, steps, kCPU);
  const TrainedRun mine = train_rank(*group, data, global, steps);
  for (int s = 0; s < steps; ++s) {
    EXPECT_NEAR(mine.losses[s], single.losses[s], 1e-5 * std::abs(single.losses[s]))
        << "step " << s;
  }
  EXPECT_LE(worst_relative(mine.gradients, single.gradients), 1e-5);
  EXPECT_LE(worst_relative(mine.parameters, single.parameters), 1e-5);
}

}  // namespace
}  // namespace loom::testing
