// The autocast switch itself (tensor/autocast.h): per thread, nested scopes restore what they
// found, disabled scopes inside enabled ones, and only bfloat16; on the CPU it changes nothing.
#include <thread>

#include "testing.h"

namespace loom {
namespace {

TEST(Autocast, ScopesNestAndRestore) {
  EXPECT_FALSE(autocast_enabled());
  {
    Autocast on;
    EXPECT_TRUE(autocast_enabled());
    {
      Autocast off(false);
      EXPECT_FALSE(autocast_enabled());
      {
        Autocast again;
        EXPECT_TRUE(autocast_enabled());
      }
      EXPECT_FALSE(autocast_enabled());
    }
    EXPECT_TRUE(autocast_enabled());
  }
  EXPECT_FALSE(autocast_enabled());
}

TEST(Autocast, IsPerThread) {
  Autocast on;
  bool other_thread_sees = true;
  std::thread t([&] { other_thread_sees = autocast_enabled(); });
  t.join();
  EXPECT_FALSE(other_thread_sees);
  EXPECT_TRUE(autocast_enabled());
}

TEST(Autocast, ComputesInBFloat16Only) {
  EXPECT_LOOM_ERROR(Autocast(true, kFloat64), "Autocast: computes in bfloat16 only, got float64");
  EXPECT_FALSE(autocast_enabled());
}

TEST(Autocast, LeavesCpuTensorsAlone) {
  Generator gen(3);
  const Tensor x = randn({2, 3, 7, 7}, kFloat32, &gen), w = randn({4, 3, 3, 3}, kFloat32, &gen);
  const Tensor a = randn({5, 6}, kFloat32, &gen), b = randn({6, 2}, kFloat32, &gen);
  const Tensor conv_plain = conv2d(x, w), mm_plain = matmul(a, b);
  Autocast on;
  const Tensor conv_cast = conv2d(x, w), mm_cast = matmul(a, b);
  EXPECT_EQ(conv_cast.dtype(), kFloat32);
  EXPECT_EQ(mm_cast.dtype(), kFloat32);
  EXPECT_TENSOR_NEAR(conv_cast, conv_plain, 0.0, 0.0);
  EXPECT_TENSOR_NEAR(mm_cast, mm_plain, 0.0, 0.0);
  EXPECT_EQ(detail::autocast_operand(a).dtype(), kFloat32);
}

}  // namespace
}  // namespace loom
