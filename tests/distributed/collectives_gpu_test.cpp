// On one GPU: NCCL with world size 1 (every collective, a communicator whose second rank never
// joins, abort) and the threads backend with 2 and 4 ranks sharing the GPU.
#include <gtest/gtest.h>

#include <chrono>

#include "collective_cases.h"
#include "testing.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

TEST(NcclWorldOne, EveryCollectiveAndDtype) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  EXPECT_EQ(std::string(g->backend()), "nccl");
  EXPECT_EQ(g->device(), kCUDA);
  for (DType dtype : all_dtypes()) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(1000003)})
      check_all_collectives(*g, dtype, n);
  }
  check_queued_collectives(*g);
}

TEST(NcclWorldOne, FromTheEnvironmentWithoutALauncher) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::init_from_environment(kCUDA);
  EXPECT_EQ(std::string(g->backend()), "nccl");
  check_all_collectives(*g, kFloat32, 129);
}

TEST(NcclWorldOne, AStreamWaitsForTheCollectiveWithoutTheHost) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  Tensor t = full({1 << 22}, 3.0, kCUDA);
  dist::WorkPtr w = g->all_reduce(t, dist::ReduceOp::Max);
  w->wait_stream();  // the compute stream now runs after the all-reduce
  Tensor doubled = t * 2;
  EXPECT_EQ(doubled.cpu().to_vector<float>()[12345], 6.0f);
}

TEST(NcclFaults, ARankThatNeverJoinsIsATimeoutNotAHang) {
  LOOM_REQUIRE_CUDA();
  dist::GroupOptions options;
  options.timeout = 3s;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_LOOM_ERROR(dist::make_nccl_group(dist::nccl_unique_id(), 0, 2, 0, options),
                    "joining the NCCL communicator of 2 ranks on cuda:0 failed");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
}

TEST(NcclFaults, AnAbortedGroupRefusesCollectives) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  Tensor t = ones({4}, kCUDA);
  g->all_reduce(t)->wait();
  g->abort("the test stops here");
  EXPECT_TRUE(g->is_aborted());
  EXPECT_LOOM_ERROR(g->all_reduce(t), "the group was aborted: the test stops here");
}

TEST(NcclFaults, TensorsOnAnotherDeviceAreRefused) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  EXPECT_LOOM_ERROR(g->all_reduce(ones({4})),
                    "is on cpu but this group's collectives run on cuda:0");
  EXPECT_LOOM_ERROR(dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, cuda_device_count()),
                    "CUDA devices are visible");
}

class ThreadsOnOneGpu : public ::testing::TestWithParam<int> {};

TEST_P(ThreadsOnOneGpu, EveryCollectiveAndDtype) {
  LOOM_REQUIRE_CUDA();
  dist::SpawnOptions options;
  options.backend = dist::Backend::Threads;
  dist::spawn(
      GetParam(), kCUDA,
      [](dist::ProcessGroup& g) {
        EXPECT_EQ(g.device(), kCUDA);
        for (DType dtype : all_dtypes()) {
          for (int64_t n : {int64_t(0), int64_t(1), int64_t(100003)})
            check_all_collectives(g, dtype, n);
        }
        check_queued_collectives(g);
      },
      options);
}

TEST_P(ThreadsOnOneGpu, EachRankHasItsOwnStreamAndTheCollectiveOrdersThem) {
  LOOM_REQUIRE_CUDA();
  dist::SpawnOptions options;
  options.backend = dist::Backend::Threads;
  std::vector<cuda::StreamHandle> streams(GetParam());
  dist::spawn(
      GetParam(), kCUDA,
      [&](dist::ProcessGroup& g) {
        streams[static_cast<size_t>(g.rank())] = cuda::current_stream(0);
        // Each rank's input is still being computed on its own stream when the collective starts.
        Tensor t = full({1 << 22}, 1.0, kCUDA) * static_cast<double>(g.rank() + 1);
        g.all_reduce(t)->wait_stream();
        const float want = g.size() * (g.size() + 1) / 2.0f;
        const std::vector<float> got = (t + 0).cpu().to_vector<float>();
        EXPECT_EQ(got.front(), want);
        EXPECT_EQ(got.back(), want);
      },
      options);
  for (size_t r = 1; r < streams.size(); ++r) EXPECT_NE(streams[r], streams[0]);
}

TEST_P(ThreadsOnOneGpu, ARankThatThrowsFailsTheOthers) {
  LOOM_REQUIRE_CUDA();
  dist::SpawnOptions options;
  options.backend = dist::Backend::Threads;
  EXPECT_LOOM_ERROR(dist::spawn(
                        GetParam(), kCUDA,
                        [](dist::ProcessGroup& g) {
                          if (g.rank() == g.size() - 1) throw Error("out of data");
                          Tensor t = ones({16}, kCUDA);
                          g.all_reduce(t)->wait();
                        },
                        options),
                    "failed: out of data");
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadsOnOneGpu, ::testing::Values(2, 4));

}  // namespace
}  // namespace loom::testing
