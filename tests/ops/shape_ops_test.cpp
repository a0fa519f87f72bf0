// cat, stack and one_hot on the CPU: the case table (shape_ops_cases.h) against float64 and
// finite differences, values, and the errors.
#include "shape_ops_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(ShapeOps, testing::shape_ops_cases, Cpu)

TEST(Cat, JoinsAlongEachDim) {
  const Tensor a = arange(6, kFloat64).reshape({2, 3});
  const Tensor b = arange(6, 10, 1, kFloat64).reshape({2, 2});
  EXPECT_EQ(cat({a, b}, 1).to_vector<double>(),
            (std::vector<double>{0, 1, 2, 6, 7, 3, 4, 5, 8, 9}));
  const Tensor c = arange(10, 13, 1, kFloat64).reshape({1, 3});
  EXPECT_EQ(cat({a, c}).to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5, 10, 11, 12}));
  EXPECT_EQ(cat({a, c}, -2).shape(), (Shape{3, 3}));
  // Non-contiguous inputs and an empty piece.
  const Tensor t = cat({a.t(), zeros({3, 0}, kFloat64), c.t()}, 1);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 3, 10, 1, 4, 11, 2, 5, 12}));
}

TEST(Cat, Errors) {
  EXPECT_LOOM_ERROR(cat({}), "cat: expects a non-empty list");
  EXPECT_LOOM_ERROR(cat({zeros({2, 3}), zeros({2, 4})}, 0),
                    "cat: input 1 has shape [2, 4] but input 0 has [2, 3]");
  EXPECT_LOOM_ERROR(cat({zeros({2, 3}), zeros({2, 3}), zeros({2, 3, 1})}, 1),
                    "cat: input 2 has shape [2, 3, 1]");
  EXPECT_LOOM_ERROR(cat({zeros({2}), zeros({2}, kFloat64)}), "cat: input 1 is float64");
  EXPECT_LOOM_ERROR(cat({zeros({2}), zeros({2})}, 1), "out of range");
  EXPECT_LOOM_ERROR(cat({scalar_tensor(1.0)}), "0-d");
  EXPECT_LOOM_ERROR(cat({zeros({2}), Tensor()}), "cat: input 1 is undefined");
}

TEST(Stack, NewDimension) {
  const Tensor a = from_vector<float>({1, 2, 3}), b = from_vector<float>({4, 5, 6});
  EXPECT_EQ(stack({a, b}).shape(), (Shape{2, 3}));
  EXPECT_EQ(stack({a, b}, 1).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(stack({a, b}, -1).shape(), (Shape{3, 2}));
  EXPECT_LOOM_ERROR(stack({a, zeros({4})}), "stack: input 1 has shape [4] but input 0 has [3]");
  EXPECT_LOOM_ERROR(stack({a, b}, 3), "out of range");
  EXPECT_LOOM_ERROR(stack({}), "stack: expects a non-empty list");
}

TEST(OneHot, ValuesAndDtypes) {
  const Tensor idx = from_vector<int64_t>({2, 0, 1, 2}, {2, 2});
  const Tensor h = one_hot(idx, 3);
  EXPECT_EQ(h.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(h.dtype(), kFloat32);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  const Tensor h32 = one_hot(from_vector<int32_t>({1, 3}), 4, kFloat64);
  EXPECT_EQ(h32.dtype(), kFloat64);
  EXPECT_EQ(h32.to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(one_hot(from_vector<int64_t>({0, 1}), 2, kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(one_hot(zeros({0}, kInt64), 5).shape(), (Shape{0, 5}));
  // Strided indices are read in their logical order.
  EXPECT_EQ(one_hot(idx.t(), 3).to_vector<float>(),
            (std::vector<float>{0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(OneHot, Errors) {
  EXPECT_LOOM_ERROR(one_hot(from_vector<int64_t>({0, 3, 1}), 3),
                    "one_hot: index 3 (at position 1) is out of range for num_classes 3");
  EXPECT_LOOM_ERROR(one_hot(from_vector<int32_t>({-1}), 3), "one_hot: index -1");
  EXPECT_LOOM_ERROR(one_hot(from_vector<float>({1}), 3),
                    "one_hot: indices must be int64 or int32, got float32");
  EXPECT_LOOM_ERROR(one_hot(from_vector<int64_t>({0}), 0), "num_classes must be positive");
}

}  // namespace
}  // namespace loom
