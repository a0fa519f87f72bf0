// Resume equals uninterrupted on a GPU: with deterministic cuDNN algorithms, a run that crashes
// mid-epoch and resumes from its checkpoint repeats every step's loss within 1e-5 (relative)
// of a run that never stopped.
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "resume_run.h"

namespace loom {
namespace {

TEST(ResumeGpu, MidEpochMatchesAnUninterruptedRun) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic_algorithms;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("loom_resume_gpu_" + std::to_string(::getpid())))
          .string();
  const testing::RunResult straight = testing::train_run(path + ".a", -1, 1, kCUDA);
  const testing::RunResult resumed = testing::train_run(path, 8, 3, kCUDA);
  std::filesystem::remove(path + ".a");
  std::filesystem::remove(path);
  ASSERT_EQ(straight.losses.size(), 15u);
  ASSERT_EQ(resumed.losses.size(), straight.losses.size());
  for (size_t i = 0; i < straight.losses.size(); ++i) {
    EXPECT_NEAR(resumed.losses[i], straight.losses[i], 1e-5 * std::abs(straight.losses[i]))
        << "step " << i + 1;
  }
  for (const auto& [name, t] : straight.weights) {
    EXPECT_TENSOR_NEAR(resumed.weights.at(name), t, 1e-6, 1e-5);
  }
}

}  // namespace
}  // namespace loom
