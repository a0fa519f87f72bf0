// train/precision.h on the CPU: the --precision names, the TF32 switch each implies, and
// train::forward, which leaves a CPU model's forward as it is (autocast is CUDA's).
#include "testing.h"

namespace loom::train {
namespace {

TEST(Precision, NamesRoundTripAndUnknownOnesAreNone) {
  for (Precision p : {Precision::Float32, Precision::TF32, Precision::BFloat16}) {
    EXPECT_EQ(precision_from_name(precision_name(p)), p);
  }
  EXPECT_FALSE(precision_from_name("fp16").has_value());
  EXPECT_FALSE(precision_from_name("").has_value());
}

TEST(Precision, Float32TurnsTf32OffAndTheOthersOn) {
  const ConvTf32Scope restore(conv_allow_tf32());
  use_precision(Precision::Float32);
  EXPECT_FALSE(conv_allow_tf32());
  use_precision(Precision::BFloat16);
  EXPECT_TRUE(conv_allow_tf32());
  use_precision(Precision::Float32);
  use_precision(Precision::TF32);
  EXPECT_TRUE(conv_allow_tf32());
}

TEST(Precision, ForwardOnTheCpuIsThePlainForward) {
  auto model = nn::seed_cnn();
  Generator gen(5);
  const Tensor x = rand({2, 3, 64, 64}, kFloat32, &gen);
  const Tensor plain = model->forward(x);
  const Tensor cast = forward(*model, x, true);
  EXPECT_EQ(cast.dtype(), kFloat32);
  EXPECT_TENSOR_NEAR(cast, plain, 0.0, 0.0);
  EXPECT_FALSE(autocast_enabled());  // the scope closed with the forward
}

}  // namespace
}  // namespace loom::train
