// matmul, bmm and linear on the CPU: the case table (linalg_cases.h) against float64 and finite
// differences, values against a triple loop for every operand rank and layout (transposed views,
// broadcast batches), shape errors.
#include "linalg_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Linalg, testing::linalg_cases, Cpu)

// [n, k] @ [k, m] by triple loop on row-major values.
std::vector<double> loop_matmul(const std::vector<double>& a, const std::vector<double>& b,
                                int64_t n, int64_t k, int64_t m) {
  std::vector<double> c(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t p = 0; p < k; ++p) c[i * m + j] += a[i * k + p] * b[p * m + j];
  return c;
}

TEST(Matmul, TwoDMatchesLoopInEveryLayout) {
  Generator gen(41);
  const Tensor a = randn({5, 3}, kFloat64, &gen), b = randn({3, 4}, kFloat64, &gen);
  const Tensor expected =
      from_vector(loop_matmul(testing::values_of(a), testing::values_of(b), 5, 3, 4), {5, 4});
  EXPECT_TENSOR_NEAR(matmul(a, b), expected, 1e-12, 1e-12);
  // Transposed views reach the BLAS as column-major operands.
  const Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
  EXPECT_FALSE(at.is_contiguous());
  EXPECT_TENSOR_NEAR(matmul(at, b), expected, 1e-12, 1e-12);
  EXPECT_TENSOR_NEAR(matmul(a, bt), expected, 1e-12, 1e-12);
  EXPECT_TENSOR_NEAR(matmul(at, bt), expected, 1e-12, 1e-12);
  // A narrowed operand (row stride larger than its width) and one that must be copied.
  const Tensor wide = randn({5, 7}, kFloat64, &gen);
  const Tensor part = wide.narrow(1, 2, 3);
  EXPECT_TENSOR_NEAR(
      matmul(part, b),
      from_vector(loop_matmul(testing::values_of(part), testing::values_of(b), 5, 3, 4), {5, 4}),
      1e-12, 1e-12);
  const Tensor cube = randn({3, 2, 4}, kFloat64, &gen);
  const Tensor odd = cube.permute({1, 0, 2}).reshape({2, 12}).narrow(1, 0, 3);
  EXPECT_TENSOR_NEAR(
      matmul(odd, b),
      from_vector(loop_matmul(testing::values_of(odd), testing::values_of(b), 2, 3, 4), {2, 4}),
      1e-12, 1e-12);
  // float32 as well.
  EXPECT_TENSOR_NEAR(matmul(a.to(kFloat32), b.to(kFloat32)), expected.to(kFloat32), 1e-5, 1e-5);
}

TEST(Matmul, VectorCases) {
  Generator gen(42);
  const Tensor v = randn({3}, kFloat64, &gen), w = randn({3}, kFloat64, &gen);
  const Tensor m = randn({3, 4}, kFloat64, &gen), n = randn({2, 3}, kFloat64, &gen);
  const auto vv = testing::values_of(v), wv = testing::values_of(w);
  const Tensor dot = matmul(v, w);
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_NEAR(dot.item<double>(), vv[0] * wv[0] + vv[1] * wv[1] + vv[2] * wv[2], 1e-12);
  const Tensor vm = matmul(v, m);
  EXPECT_EQ(vm.shape(), (Shape{4}));
  EXPECT_TENSOR_NEAR(vm, from_vector(loop_matmul(vv, testing::values_of(m), 1, 3, 4), {4}), 1e-12,
                     1e-12);
  const Tensor nv = matmul(n, v);
  EXPECT_EQ(nv.shape(), (Shape{2}));
  EXPECT_TENSOR_NEAR(nv, from_vector(loop_matmul(testing::values_of(n), vv, 2, 3, 1), {2}), 1e-12,
                     1e-12);
  const Tensor batch = randn({2, 3, 4}, kFloat64, &gen);
  EXPECT_EQ(matmul(v, batch).shape(), (Shape{2, 4}));
  EXPECT_EQ(matmul(batch.transpose(1, 2), v).shape(), (Shape{2, 4}));
}

TEST(Matmul, BatchesBroadcast) {
  Generator gen(43);
  const Tensor a = randn({2, 1, 3, 4}, kFloat64, &gen);
  const Tensor b = randn({3, 4, 5}, kFloat64, &gen);
  const Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 3, 3, 5}));
  const auto av = testing::values_of(a), bv = testing::values_of(b), cv = testing::values_of(c);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const std::vector<double> am(av.begin() + i * 12, av.begin() + (i + 1) * 12);
      const std::vector<double> bm(bv.begin() + j * 20, bv.begin() + (j + 1) * 20);
      const auto ref = loop_matmul(am, bm, 3, 4, 5);
      for (int64_t e = 0; e < 15; ++e) EXPECT_NEAR(cv[(i * 3 + j) * 15 + e], ref[e], 1e-12);
    }
  // A 2-D operand against a batch, on either side.
  const Tensor m = randn({4, 5}, kFloat64, &gen);
  const Tensor left = matmul(a, m);
  EXPECT_EQ(left.shape(), (Shape{2, 1, 3, 5}));
  EXPECT_TENSOR_NEAR(left.select(0, 1).select(0, 0),
                     from_vector(loop_matmul(std::vector<double>(av.begin() + 12, av.end()),
                                             testing::values_of(m), 3, 4, 5),
                                 {3, 5}),
                     1e-12, 1e-12);
  const Tensor p = randn({2, 4}, kFloat64, &gen);
  const Tensor right = matmul(p, b);
  EXPECT_EQ(right.shape(), (Shape{3, 2, 5}));
  EXPECT_TENSOR_NEAR(
      right.select(0, 2),
      from_vector(loop_matmul(testing::values_of(p), std::vector<double>(bv.begin() + 40, bv.end()),
                              2, 4, 5),
                  {2, 5}),
      1e-12, 1e-12);
}

TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  const Tensor c = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(matmul(zeros({0, 2}), zeros({2, 3})).shape(), (Shape{0, 3}));
}

TEST(Bmm, MatchesLoop) {
  Generator gen(44);
  const Tensor a = randn({3, 2, 4}, kFloat64, &gen), b = randn({3, 4, 5}, kFloat64, &gen);
  const Tensor c = bmm(a, b.transpose(1, 2).contiguous().transpose(1, 2));
  const auto av = testing::values_of(a), bv = testing::values_of(b), cv = testing::values_of(c);
  for (int64_t i = 0; i < 3; ++i) {
    const auto ref =
        loop_matmul(std::vector<double>(av.begin() + i * 8, av.begin() + (i + 1) * 8),
                    std::vector<double>(bv.begin() + i * 20, bv.begin() + (i + 1) * 20), 2, 4, 5);
    for (int64_t e = 0; e < 10; ++e) EXPECT_NEAR(cv[i * 10 + e], ref[e], 1e-12);
  }
}

TEST(Linear, MatchesLoopWithAndWithoutBias) {
  Generator gen(45);
  const Tensor x = randn({2, 3, 4}, kFloat64, &gen);
  const Tensor w = randn({5, 4}, kFloat64, &gen), bias = randn({5}, kFloat64, &gen);
  const auto xv = testing::values_of(x), wv = testing::values_of(w), bv = testing::values_of(bias);
  const Tensor y = linear(x, w, bias), y0 = linear(x, w);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 5}));
  const auto yv = testing::values_of(y), y0v = testing::values_of(y0);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t o = 0; o < 5; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < 4; ++i) acc += xv[r * 4 + i] * wv[o * 4 + i];
      EXPECT_NEAR(y0v[r * 5 + o], acc, 1e-12);
      EXPECT_NEAR(yv[r * 5 + o], acc + bv[o], 1e-12);
    }
  EXPECT_EQ(linear(randn({4}, kFloat64, &gen), w).shape(), (Shape{5}));
}

TEST(Linalg, ShapeErrorsNameBothShapes) {
  EXPECT_LOOM_ERROR(matmul(zeros({2, 3}), zeros({4, 5})),
                    "matmul: shapes [2, 3] and [4, 5] cannot be multiplied");
  EXPECT_LOOM_ERROR(matmul(zeros({3}), zeros({4})),
                    "matmul: shapes [3] and [4] cannot be multiplied");
  EXPECT_LOOM_ERROR(matmul(zeros({2, 2, 3}), zeros({3, 3, 1})),
                    "batch dimensions of shapes [2, 2, 3] and [3, 3, 1]");
  EXPECT_LOOM_ERROR(matmul(scalar_tensor(1.0), zeros({2})), "at least one dimension");
  EXPECT_LOOM_ERROR(matmul(zeros({2, 2}), zeros({2, 2}, kFloat64)),
                    "one dtype, got float32 and float64");
  EXPECT_LOOM_ERROR(matmul(zeros({2, 2}, kInt64), zeros({2, 2}, kInt64)), "floating-point");
  EXPECT_LOOM_ERROR(bmm(zeros({2, 3}), zeros({3, 2})),
                    "bmm: expects two 3-D tensors, got shapes [2, 3] and [3, 2]");
  EXPECT_LOOM_ERROR(bmm(zeros({2, 2, 3}), zeros({3, 3, 2})), "bmm: shapes [2, 2, 3] and [3, 3, 2]");
  EXPECT_LOOM_ERROR(linear(zeros({2, 3}), zeros({4, 5})),
                    "linear: input of shape [2, 3] does not end in in_features=5");
  EXPECT_LOOM_ERROR(linear(zeros({2, 3}), zeros({3})), "weight must be 2-D");
  EXPECT_LOOM_ERROR(linear(zeros({2, 3}), zeros({4, 3}), zeros({3})),
                    "linear: bias of shape [3] does not match out_features=4");
}

}  // namespace
}  // namespace loom
