// conv2d on the CPU: the case table (conv_cases.h) against float64, the direct 7-loop
// convolution and finite differences; 'same'/'valid' output sizes, hand-computed values,
// strided inputs, only the requested gradients, errors and the algorithm settings.
#include "conv_cases.h"

namespace loom {
namespace {

using testing::random_leaf;

LOOM_CASE_TABLE_TEST(Conv2d, testing::conv_cases, Cpu)

TEST(Conv2d, SameAndValidOutputSizes) {
  Tensor x = randn({1, 3, 64, 64});
  Tensor w = randn({32, 3, 3, 3});
  // The seed's Keras Convolution2D(32, 3, 3): a 3x3 kernel with stride 3.
  EXPECT_EQ(conv2d(x, w, Tensor(), Conv2dOptions().stride(3)).shape(), (Shape{1, 32, 21, 21}));
  EXPECT_EQ(conv2d(x, w, Tensor(), Conv2dOptions().stride(3).padding(Padding::Same)).shape(),
            (Shape{1, 32, 22, 22}));
  EXPECT_EQ(conv2d(x, w, Tensor(), Conv2dOptions().padding(Padding::Same)).shape(),
            (Shape{1, 32, 64, 64}));
  EXPECT_EQ(conv2d(x, w, Tensor(), Conv2dOptions().padding(Padding::Valid)).shape(),
            (Shape{1, 32, 62, 62}));
  EXPECT_EQ(conv2d(x, w, Tensor(), Conv2dOptions().stride(2).padding(Padding::Same)).shape(),
            (Shape{1, 32, 32, 32}));
}

TEST(Conv2d, KnownSmallValues) {
  // x = 1..9 in a 3x3 image, an all-ones 2x2 kernel and bias 0.5: each output is a window sum.
  Tensor x = arange(1, 10, 1, kFloat64).reshape({1, 1, 3, 3});
  Tensor w = ones({1, 1, 2, 2}, kFloat64);
  Tensor y = conv2d(x, w, full({1}, 0.5, kFloat64));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{12.5, 16.5, 24.5, 28.5}));
}

TEST(Conv2d, NonContiguousInputs) {
  Generator gen(7);
  Tensor x = randn({2, 3, 6, 5}, kFloat64, &gen);
  Tensor w = randn({4, 3, 3, 3}, kFloat64, &gen);
  Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);  // same values, other strides
  ASSERT_FALSE(xt.is_contiguous());
  EXPECT_TENSOR_NEAR(conv2d(xt, w, Tensor(), Conv2dOptions().padding(1)),
                     conv2d(x, w, Tensor(), Conv2dOptions().padding(1)), 1e-12, 0);
}

TEST(Conv2d, OnlyRequestedGradients) {
  Tensor x = random_leaf({2, 2, 5, 5}, 1);
  Tensor w = randn({3, 2, 3, 3}, kFloat64);  // a constant
  Tensor y = conv2d(x, w);
  y.backward(ones(y.shape(), kFloat64));
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  // With a ones gradient, dx at a pixel is the sum of the weights covering it: at the corner,
  // only w[:, :, 0, 0].
  const auto wv = w.to_vector<double>();
  double corner = 0;
  for (int64_t o = 0; o < 3; ++o) corner += wv[(o * 2 + 0) * 9];
  EXPECT_NEAR(x.grad().to_vector<double>()[0], corner, 1e-12);
}

TEST(Conv2d, Errors) {
  Tensor x = randn({1, 3, 8, 8});
  Tensor w = randn({4, 3, 3, 3});
  EXPECT_LOOM_ERROR(conv2d(randn({3, 8, 8}), w), "input must be 4-D");
  EXPECT_LOOM_ERROR(conv2d(x, randn({4, 3, 3})), "weight must be 4-D");
  EXPECT_LOOM_ERROR(conv2d(x, randn({4, 2, 3, 3})), "input has 3 channels");
  EXPECT_LOOM_ERROR(conv2d(x, randn({4, 3, 9, 3})), "larger than the padded input");
  EXPECT_LOOM_ERROR(conv2d(x, randn({4, 3, 5, 5}), Tensor(), Conv2dOptions().dilation(3)),
                    "larger than the padded input");
  EXPECT_LOOM_ERROR(conv2d(x, w, Tensor(), Conv2dOptions().stride(0)), "must be >= 1");
  EXPECT_LOOM_ERROR(conv2d(x, w, Tensor(), Conv2dOptions().padding(-1)), ">= 0");
  EXPECT_LOOM_ERROR(conv2d(x, w, randn({3})), "bias shape");
  EXPECT_LOOM_ERROR(conv2d(x, w, randn({4}, kFloat64)), "bias must have the input's dtype");
  EXPECT_LOOM_ERROR(conv2d(x, randn({4, 3, 3, 3}, kFloat64)), "weight dtype");
  EXPECT_LOOM_ERROR(conv2d(x.to(kInt64), w.to(kInt64)), "floating point");
  EXPECT_LOOM_ERROR(conv2d(Tensor(), w), "must be defined");
  EXPECT_LOOM_ERROR(conv2d(randn({0, 3, 8, 8}), w), "empty");
}

TEST(Conv2d, DeterministicFlag) {
  const bool before = deterministic();
  set_deterministic(true);
  EXPECT_TRUE(deterministic());
  set_deterministic(false);
  EXPECT_FALSE(deterministic());
  set_deterministic(before);
}

TEST(Conv2d, BenchmarkLimitTakesZeroOrACountAndRefusesNegatives) {
  EXPECT_EQ(conv_benchmark_limit(), 16);
  set_conv_benchmark_limit(0);
  EXPECT_EQ(conv_benchmark_limit(), 0);
  EXPECT_LOOM_ERROR(set_conv_benchmark_limit(-1),
                    "must be 0 (time every engine) or positive, got -1");
  EXPECT_EQ(conv_benchmark_limit(), 0);  // the refused value changed nothing
  set_conv_benchmark_limit(16);
}

}  // namespace
}  // namespace loom
