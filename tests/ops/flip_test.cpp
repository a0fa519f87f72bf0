// flip on the CPU: values, every run layout against the slice-by-slice reference for every
// element size, non-contiguous input, its gradient in float64 against finite differences, and the
// errors.
#include "flip_cases.h"
#include "testing.h"

namespace loom {
namespace {

TEST(Flip, ReversesAlongTheNamedDimensions) {
  const Tensor x = arange(6, kFloat64).reshape({2, 3});
  EXPECT_EQ(flip(x, {1}).to_vector<double>(), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(flip(x, {0}).to_vector<double>(), (std::vector<double>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(flip(x, {-1, 0}).to_vector<double>(), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(flip(x, {}).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(flip(x, {1}).shape(), x.shape());
}

TEST(Flip, MatchesTheSliceReferenceForEveryLayoutAndElementSize) {
  Generator gen(71);
  for (const testing::FlipCase& c : testing::flip_cases()) {
    const Tensor values = randn(c.shape, TensorOptions(kFloat64), &gen) * 100.0;
    for (DType dtype : {kFloat64, kFloat32, kBFloat16, kInt64, kInt32, kUInt8}) {
      const Tensor x = values.abs().to(dtype);
      SCOPED_TRACE(shape_str(c.shape) + " dims " + shape_str(Shape(c.dims.begin(), c.dims.end())) +
                   " " + dtype_name(dtype));
      const Tensor got = flip(x, c.dims);
      ASSERT_EQ(got.dtype(), dtype);
      EXPECT_TENSOR_NEAR(got.to(kFloat64), testing::flip_by_slices(x, c.dims).to(kFloat64), 0, 0);
    }
  }
}

TEST(Flip, TheMostRunsATensorCanHave) {
  // Eight dimensions (loom's most), alternately flipped and kept: eight runs.
  const Tensor eight = arange(256, kFloat64).reshape(Shape(8, 2));
  EXPECT_TENSOR_NEAR(flip(eight, {0, 2, 4, 6}), testing::flip_by_slices(eight, {0, 2, 4, 6}), 0, 0);
}

TEST(Flip, ReadsANonContiguousInputInItsLogicalOrder) {
  Generator gen(72);
  const Tensor x = randn({5, 4, 3}, TensorOptions(kFloat32), &gen);
  const Tensor view = x.transpose(0, 2);  // [3, 4, 5], strided
  EXPECT_TENSOR_NEAR(flip(view, {2}), testing::flip_by_slices(view, {2}), 0, 0);
  EXPECT_TRUE(flip(view, {2}).is_contiguous());
}

TEST(Flip, EmptyAndZeroDimensionalTensors) {
  EXPECT_EQ(flip(zeros({0, 3}), {0}).shape(), (Shape{0, 3}));
  EXPECT_EQ(flip(scalar_tensor(2.5), {}).item<double>(), 2.5);
  EXPECT_EQ(flip(full({1, 1}, 4.0), {0, 1}).to_vector<float>(), (std::vector<float>{4.0f}));
}

TEST(Flip, GradientIsTheFlippedGradient) {
  Generator gen(73);
  for (const testing::FlipCase& c : testing::flip_cases()) {
    const Tensor x = randn(c.shape, TensorOptions(kFloat64), &gen).requires_grad_();
    EXPECT_GRADCHECK([&](const std::vector<Tensor>& in) { return flip(in[0], c.dims); }, {x});
  }
}

TEST(Flip, Errors) {
  EXPECT_LOOM_ERROR(flip(zeros({2, 3}), {2}), "out of range");
  EXPECT_LOOM_ERROR(flip(zeros({2, 3}), {-3}), "out of range");
  EXPECT_LOOM_ERROR(flip(zeros({2, 3}), {1, -1}), "flip: dimension 1 is named twice in [1, -1]");
  EXPECT_LOOM_ERROR(flip(Tensor(), {0}), "flip: the input tensor is undefined");
}

}  // namespace
}  // namespace loom
