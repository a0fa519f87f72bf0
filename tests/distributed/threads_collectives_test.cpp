// The threads backend: every collective x dtype x world size, on the CPU.
#include <gtest/gtest.h>

#include "collective_cases.h"

namespace loom::testing {
namespace {

class ThreadsCollectives : public ::testing::TestWithParam<int> {};

TEST_P(ThreadsCollectives, EveryCollectiveAndDtypeGivesTheClosedFormAnswer) {
  const int world = GetParam();
  dist::spawn(world, kCPU, [](dist::ProcessGroup& g) {
    for (DType dtype : all_dtypes()) {
      for (int64_t n : {int64_t(0), int64_t(1), int64_t(37), int64_t(70001)})
        check_all_collectives(g, dtype, n);
    }
  });
}

TEST_P(ThreadsCollectives, QueuedCollectivesRunInOrder) {
  dist::spawn(GetParam(), kCPU, [](dist::ProcessGroup& g) { check_queued_collectives(g); });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ThreadsCollectives, ::testing::Values(1, 2, 3, 4, 8));

TEST(ThreadsGroup, NamesItsRankAndBackend) {
  dist::spawn(3, kCPU, [](dist::ProcessGroup& g) {
    EXPECT_EQ(g.size(), 3);
    EXPECT_EQ(std::string(g.backend()), "threads");
    EXPECT_EQ(g.who(), "rank " + std::to_string(g.rank()) + " of 3 (threads)");
    EXPECT_EQ(g.device(), kCPU);
  });
}

TEST(ThreadsGroup, EachCollectiveGetsTheNextSequenceNumber) {
  dist::spawn(2, kCPU, [](dist::ProcessGroup& g) {
    Tensor t = ones({4});
    EXPECT_EQ(g.all_reduce(t)->info().sequence, 0u);
    EXPECT_EQ(g.barrier()->info().sequence, 1u);
    EXPECT_EQ(g.broadcast(t, 1)->info().sequence, 2u);
    EXPECT_EQ(g.next_sequence_number(), 3u);
    g.barrier()->wait();
  });
}

TEST(ThreadsGroup, ResultsAreBitIdenticalOnEveryRank) {
  // Rank-order sums: the float result must not depend on which thread reduced.
  std::vector<std::vector<float>> results(4);
  dist::spawn(4, kCPU, [&](dist::ProcessGroup& g) {
    Tensor t = randn({4097});  // each rank its own generator: different values per rank
    g.all_reduce(t, dist::ReduceOp::Avg)->wait();
    results[static_cast<size_t>(g.rank())] = t.to_vector<float>();
  });
  for (int r = 1; r < 4; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r;
}

}  // namespace
}  // namespace loom::testing
