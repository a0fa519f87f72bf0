// The MPI backend on healthy ranks: every collective in every dtype against closed-form
// answers, queued and asynchronous collectives, several groups at once, the barrier and the
// cross-rank check when ranks agree.
#include <cstdlib>
#include <string>
#include <thread>

#include "mpi_testing.h"

namespace loom::testing {
namespace {

using dist::GroupPtr;
using dist::ProcessGroup;
using dist::ReduceOp;

TEST(MpiGroup, DescribesItself) {
  GroupPtr group = fresh_group();
  EXPECT_STREQ(group->backend(), "mpi");
  EXPECT_EQ(group->device(), kCPU);
  // The launcher's numbering is MPI_COMM_WORLD's.
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_TRUE(rank && size) << "not started by Open MPI's mpiexec";
  EXPECT_EQ(group->rank(), std::atoi(rank));
  EXPECT_EQ(group->size(), std::atoi(size));
  EXPECT_EQ(group->who(), "rank " + std::string(rank) + " of " + size + " (mpi)");
}

TEST(MpiGroup, EveryCollectiveInEveryDtype) {
  GroupPtr group = fresh_group();
  for (DType dtype : all_dtypes()) {
    for (int64_t n : {0, 1, 13}) check_all_collectives(*group, dtype, n);
  }
  EXPECT_FALSE(group->is_aborted());
}

TEST(MpiGroup, LargeTensorsTakeMpisLargeMessagePath) {
  // 1 MB per rank: far past the eager limit of shared memory, so the rendezvous protocol runs.
  GroupPtr group = fresh_group();
  check_all_collectives(*group, kFloat32, 1 << 18);
}

TEST(MpiGroup, QueuedCollectivesWaitedInReverseOrder) {
  GroupPtr group = fresh_group();
  check_queued_collectives(*group);
}

TEST(MpiGroup, StartsTwoAndWaitsForTheSecondFirst) {
  GroupPtr group = fresh_group();
  ProcessGroup& g = *group;
  Tensor summed = rank_tensor(g, 64, kFloat64);
  Tensor mine = rank_tensor(g, 3, kInt32);
  Tensor gathered = zeros({3 * g.size()}, kInt32);
  dist::WorkPtr first = g.all_reduce(summed, ReduceOp::Max);
  dist::WorkPtr second = g.all_gather(gathered, mine);
  second->wait();
  first->wait();
  EXPECT_TRUE(first->is_completed());
  EXPECT_EQ(second->info().sequence, first->info().sequence + 1);
  LOOM_EXPECT_VALUES(host_values(summed), expected_reduce(ReduceOp::Max, g.size(), int64_t(i)),
                     "max");
  LOOM_EXPECT_VALUES(host_values(gathered), rank_value(static_cast<int>(i / 3), int64_t(i % 3)),
                     "all_gather");
}

// Three groups, each started by each rank in a different order and waited in another: they are
// independent communicators with their own threads, so no order can cross them.
TEST(MpiGroup, SeveralGroupsAtOnce) {
  std::vector<GroupPtr> groups = {fresh_group(), fresh_group(), fresh_group()};
  ProcessGroup& g = *groups[0];
  const int world = g.size(), rank = g.rank();
  Tensor summed = rank_tensor(*groups[0], 100, kFloat32);
  Tensor from_last = rank_tensor(*groups[1], 100, kInt64);
  Tensor mine = rank_tensor(*groups[2], 10, kUInt8);
  Tensor gathered = zeros({10 * world}, kUInt8);
  std::vector<dist::WorkPtr> works(3);
  for (int k = 0; k < 3; ++k) {
    const int which = (rank + k) % 3;
    if (which == 0) works[0] = groups[0]->all_reduce(summed);
    if (which == 1) works[1] = groups[1]->broadcast(from_last, world - 1);
    if (which == 2) works[2] = groups[2]->all_gather(gathered, mine);
  }
  for (int k = 0; k < 3; ++k) works[(2 * rank + 2 - k) % 3]->wait();
  LOOM_EXPECT_VALUES(host_values(summed), expected_reduce(ReduceOp::Sum, world, int64_t(i)),
                     "group 0");
  LOOM_EXPECT_VALUES(host_values(from_last), rank_value(world - 1, int64_t(i)), "group 1");
  LOOM_EXPECT_VALUES(host_values(gathered), rank_value(static_cast<int>(i / 10), int64_t(i % 10)),
                     "group 2");
  for (const GroupPtr& each : groups) EXPECT_FALSE(each->is_aborted());
}

// Rank 0 enters a barrier that the others can only enter after an all_reduce on a second group
// that rank 0 starts later: until then the barrier cannot have completed. (The pause gives a
// broken barrier the chance to complete early; the test does not rely on its length.)
TEST(MpiGroup, BarrierWaitsForEveryRank) {
  GroupPtr gate = fresh_group(), other = fresh_group();
  LOOM_REQUIRE_TWO_RANKS(*gate);
  Tensor t = ones({1});
  if (gate->rank() == 0) {
    dist::WorkPtr barrier = gate->barrier();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(barrier->is_completed()) << "the barrier completed before the other ranks arrived";
    other->all_reduce(t)->wait();
    barrier->wait();
  } else {
    other->all_reduce(t)->wait();
    gate->barrier()->wait();
  }
  EXPECT_EQ(t.item<float>(), static_cast<float>(gate->size()));
}

TEST(MpiGroup, CheckedCollectivesPassWhenRanksAgree) {
  GroupPtr group =
      fresh_group(scaled(std::chrono::seconds(30), kMpiCeiling), /*check_collectives=*/true);
  check_all_collectives(*group, kFloat32, 5);
  check_all_collectives(*group, kInt64, 0);
  EXPECT_FALSE(group->is_aborted());
  // The fingerprint exchanges take no numbers: float32 ran 4 all_reduces, a broadcast per root,
  // an all_gather, 4 reduce_scatters and a barrier; int64 one all_reduce and reduce_scatter
  // fewer (no avg).
  const uint64_t world = static_cast<uint64_t>(group->size());
  EXPECT_EQ(group->next_sequence_number(), (10 + world) + (8 + world));
}

}  // namespace
}  // namespace loom::testing
