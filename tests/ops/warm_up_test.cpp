// loom::warm_up (ops/warm_up.h) without a GPU: nothing to do for the CPU, and for a CUDA device
// a loom::Error (never a crash) where loom has no CUDA or the machine no device.
#include "testing.h"

namespace loom {
namespace {

using namespace testing;

TEST(WarmUp, TheCpuHasNothingToWarmUp) { EXPECT_NO_THROW(warm_up(Device("cpu"))); }

TEST(WarmUp, ACudaDeviceThatIsNotThereIsALoomError) {
  if (built_with_cuda() && cuda_is_available())
    GTEST_SKIP() << "this machine has a CUDA device (the gpu test covers it)";
  EXPECT_LOOM_ERROR(warm_up(cuda_device(0)), "warm_up(cuda:0): ");
}

}  // namespace
}  // namespace loom
