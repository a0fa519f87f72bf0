// cuBLAS products against the Eigen ones on fresh random inputs, forward and backward, for
// every operand rank, transposed views and broadcast batches.
#include "parity_check.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;
using testing::Function;

Tensor random(const Shape& shape, uint64_t seed, DType dtype = kFloat32) {
  Generator gen(seed);
  return randn(shape, dtype, &gen);
}

TEST(LinalgGpu, MatmulParity) {
  LOOM_REQUIRE_CUDA();
  const Function mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  const Function mm_tt = [](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1].t()); };
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5, 3}, {3, 4}},    {{64, 96}, {96, 48}}, {{3}, {3}},
      {{3}, {3, 4}},       {{2, 3}, {3}},        {{2, 1, 3, 4}, {3, 4, 5}},
      {{2, 3, 4}, {4, 5}}, {{2, 4}, {3, 4, 5}},  {{7, 1, 8}, {8, 2}}};
  uint64_t seed = 300;
  for (const auto& c : cases) {
    SCOPED_TRACE(shape_str(c.first) + " @ " + shape_str(c.second));
    expect_cuda_parity(mm, {random(c.first, seed++), random(c.second, seed++)}, 1e-4, 1e-4);
  }
  expect_cuda_parity(mm_tt, {random({4, 6}, seed++), random({5, 4}, seed++)}, 1e-4, 1e-4);
  expect_cuda_parity(mm, {random({6, 5}, seed++, kFloat64), random({5, 3}, seed++, kFloat64)},
                     1e-12, 1e-10);
  // A larger product than one tile, and an operand the BLAS cannot read as it is.
  expect_cuda_parity(mm, {random({200, 300}, seed++), random({300, 100}, seed++)}, 1e-3, 1e-4);
  const Function odd = [](const std::vector<Tensor>& in) {
    return matmul(in[0].permute({1, 0, 2}).reshape({2, 12}).narrow(1, 0, 3), in[1]);
  };
  expect_cuda_parity(odd, {random({3, 2, 4}, seed++), random({3, 4}, seed++)}, 1e-4, 1e-4);
}

TEST(LinalgGpu, BmmAndLinearParity) {
  LOOM_REQUIRE_CUDA();
  expect_cuda_parity(
      [](const std::vector<Tensor>& in) { return bmm(in[0], in[1].transpose(1, 2)); },
      {random({3, 4, 5}, 400), random({3, 6, 5}, 401)}, 1e-4, 1e-4);
  expect_cuda_parity([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                     {random({2, 3, 8}, 402), random({5, 8}, 403), random({5}, 404)}, 1e-4, 1e-4);
  expect_cuda_parity([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); },
                     {random({8}, 405), random({5, 8}, 406)}, 1e-4, 1e-4);
}

TEST(LinalgGpu, EmptyInnerDimensionAndErrors) {
  LOOM_REQUIRE_CUDA();
  EXPECT_EQ(matmul(zeros({2, 0}, kCUDA), zeros({0, 3}, kCUDA)).cpu().to_vector<float>(),
            std::vector<float>(6, 0.0f));
  EXPECT_LOOM_ERROR(matmul(zeros({2, 3}, kCUDA), zeros({3, 2})), "one device");
  EXPECT_LOOM_ERROR(matmul(zeros({2, 3}, kCUDA), zeros({2, 2}, kCUDA)), "[2, 3] and [2, 2]");
}

}  // namespace
}  // namespace loom
