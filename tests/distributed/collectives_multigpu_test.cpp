// NCCL with one rank per GPU, as many as the machine has (skipped below two): the same test
// bodies as the threads backend, and the fault cases over real NCCL.
#include <gtest/gtest.h>

#include <chrono>

#include "collective_cases.h"
#include "testing.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

#define LOOM_REQUIRE_GPUS(n)                                                                \
  do {                                                                                      \
    LOOM_REQUIRE_CUDA();                                                                    \
    if (cuda_device_count() < (n)) {                                                        \
      GTEST_SKIP() << "needs " << (n) << " GPUs, this machine has " << cuda_device_count(); \
    }                                                                                       \
  } while (0)

std::vector<int> world_sizes() {
  std::vector<int> sizes;
  for (int n = 2; n <= cuda_device_count(); n *= 2) sizes.push_back(n);
  if (cuda_device_count() > 2 && (cuda_device_count() & (cuda_device_count() - 1))) {
    sizes.push_back(cuda_device_count());
  }
  return sizes;
}

TEST(NcclRanks, EveryCollectiveAndDtypeOnEveryWorldSize) {
  LOOM_REQUIRE_GPUS(2);
  for (int world : world_sizes()) {
    dist::spawn(world, kCUDA, [](dist::ProcessGroup& g) {
      EXPECT_EQ(g.device(), cuda_device(g.rank()));
      for (DType dtype : all_dtypes()) {
        for (int64_t n : {int64_t(0), int64_t(1), int64_t(1000003)})
          check_all_collectives(g, dtype, n);
      }
      check_queued_collectives(g);
    });
  }
}

TEST(NcclRanks, ARankThatThrowsFailsThePendingCollectivesOfTheOthers) {
  LOOM_REQUIRE_GPUS(2);
  dist::SpawnOptions options;
  options.group.timeout = 5min;  // the others must fail because of the throw, not time out
  const auto start = std::chrono::steady_clock::now();
  EXPECT_LOOM_ERROR(dist::spawn(
                        2, kCUDA,
                        [](dist::ProcessGroup& g) {
                          Tensor t = ones({1 << 20}, cuda_device(g.rank()));
                          g.all_reduce(t)->wait();
                          if (g.rank() == 1) throw Error("rank 1 gives up");
                          g.all_reduce(t)->wait();  // rank 1 never joins this one
                        },
                        options),
                    "rank 1 failed: rank 1 gives up");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2min);
}

TEST(NcclRanks, ARankThatNeverArrivesTimesOutOnTheDevice) {
  LOOM_REQUIRE_GPUS(2);
  dist::SpawnOptions options;
  options.group.timeout = 3s;
  std::string rank0_error;
  EXPECT_LOOM_ERROR(dist::spawn(
                        2, kCUDA,
                        [&](dist::ProcessGroup& g) {
                          if (g.rank() == 1) return;
                          Tensor t = ones({2, 3}, kCUDA);
                          try {
                            g.all_reduce(t)->wait();
                          } catch (const Error& e) {
                            rank0_error = e.what();
                            throw;
                          }
                        },
                        options),
                    "rank 0 failed");
  EXPECT_NE(rank0_error.find("all_reduce #0 (sum, float32 [2, 3])"), std::string::npos)
      << rank0_error;
  EXPECT_NE(rank0_error.find("timed out"), std::string::npos) << rank0_error;
}

TEST(NcclRanks, MismatchedCollectivesAreCaughtByTheFingerprintCheck) {
  LOOM_REQUIRE_GPUS(2);
  dist::SpawnOptions options;
  options.group.check_collectives = true;
  options.group.timeout = 30s;
  EXPECT_LOOM_ERROR(dist::spawn(
                        2, kCUDA,
                        [](dist::ProcessGroup& g) {
                          Tensor t = ones({10}, cuda_device(g.rank()));
                          if (g.rank() == 0)
                            g.all_reduce(t)->wait();
                          else
                            g.broadcast(t, 0)->wait();
                        },
                        options),
                    "collectives differ across ranks");
}

}  // namespace
}  // namespace loom::testing
