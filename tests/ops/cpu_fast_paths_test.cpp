// The CPU backend's fast paths against plain loops on random inputs: elementwise ops over
// broadcast and non-contiguous operands (walked by cursors), max pooling's scatter backward
// (overlapping windows), and single large matrix products split over threads (by rows and by
// columns, with transposed operands). Sizes exceed one thread's share, so chunks split rows.
#include <random>

#include "testing.h"

namespace loom {
namespace {

TEST(CpuElementwise, BroadcastBiasOverChannels) {
  const Tensor x = randn({8, 16, 23, 29});
  const Tensor b = randn({16, 1, 1});
  const std::vector<double> got = testing::values_of(x + b), xv = testing::values_of(x),
                            bv = testing::values_of(b);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / (23 * 29)) % 16;
    ASSERT_EQ(got[i], static_cast<double>(static_cast<float>(xv[i]) + static_cast<float>(bv[c])));
  }
}

TEST(CpuElementwise, RowVectorAndTransposedOperands) {
  const Tensor a = randn({300, 257});
  const Tensor row = randn({257});
  const Tensor bt = randn({257, 300}).t();  // [300, 257], column-major
  const std::vector<double> sum = testing::values_of(a + row),
                            prod = testing::values_of(mul(bt, a));
  const std::vector<double> av = testing::values_of(a), rv = testing::values_of(row),
                            bv = testing::values_of(bt);
  for (int64_t i = 0; i < 300; ++i) {
    for (int64_t j = 0; j < 257; ++j) {
      const int64_t k = i * 257 + j;
      ASSERT_EQ(sum[k], static_cast<double>(static_cast<float>(av[k]) + static_cast<float>(rv[j])));
      ASSERT_EQ(prod[k],
                static_cast<double>(static_cast<float>(bv[k]) * static_cast<float>(av[k])));
    }
  }
}

TEST(CpuElementwise, ThreeOperandsWithMixedBroadcasts) {
  const Tensor cond = gt(randn({40, 1, 300}), 0.0);
  const Tensor a = randn({1, 7, 300}).to(kFloat64);
  const Tensor b = randn({40, 7, 1}).to(kFloat64);
  const std::vector<double> got = testing::values_of(where(cond, a, b));
  const std::vector<double> cv = testing::values_of(cond), av = testing::values_of(a),
                            bv = testing::values_of(b);
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 7; ++j)
      for (int64_t k = 0; k < 300; ++k) {
        const double expected = cv[i * 300 + k] != 0 ? av[j * 300 + k] : bv[i * 7 + j];
        ASSERT_EQ(got[(i * 7 + j) * 300 + k], expected);
      }
}

TEST(CpuMaxPool, BackwardAddsEachGradientAtItsArgmax) {
  // 3x3 windows with stride 2 overlap, so an input pixel can collect several gradients.
  Tensor x = randn({4, 5, 33, 31}, TensorOptions(kFloat64));
  x.set_requires_grad(true);
  const Tensor y = max_pool2d(x, 3, 2, 1);
  const Tensor dy = randn(y.shape(), TensorOptions(kFloat64));
  sum(y * dy).backward();
  const std::vector<double> xv = testing::values_of(x.detach()), dyv = testing::values_of(dy),
                            dx = testing::values_of(x.grad());
  const int64_t H = 33, W = 31, OH = y.size(2), OW = y.size(3);
  std::vector<double> expected(xv.size(), 0.0);
  for (int64_t p = 0; p < 20; ++p)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        int64_t best = -1;
        for (int64_t iy = std::max<int64_t>(0, oy * 2 - 1); iy < std::min(H, oy * 2 + 2); ++iy)
          for (int64_t ix = std::max<int64_t>(0, ox * 2 - 1); ix < std::min(W, ox * 2 + 2); ++ix) {
            const int64_t k = (p * H + iy) * W + ix;
            if (best < 0 || xv[k] > xv[best]) best = k;
          }
        expected[best] += dyv[(p * OH + oy) * OW + ox];
      }
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(dx[i], expected[i], 1e-12) << i;
}

// C = A B by the definition, in double.
std::vector<double> reference_product(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = testing::values_of(a), bv = testing::values_of(b);
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  std::vector<double> c(n * m, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < m; ++j) c[i * m + j] += av[i * k + l] * bv[l * m + j];
  return c;
}

TEST(CpuMatmul, LargeSingleProductsSplitOverThreads) {
  struct Case {
    Tensor a, b;
  };
  const std::vector<Case> cases = {
      {randn({37, 700}), randn({700, 130})},          // wider than tall: split by columns
      {randn({700, 37}).t(), randn({130, 700}).t()},  // both transposed
      {randn({1000, 33}), randn({33, 70})},           // taller than wide: split by rows
      {randn({70, 1000}).t(), randn({33, 70}).t()},
  };
  for (const Case& c : cases) {
    const std::vector<double> got = testing::values_of(matmul(c.a, c.b)),
                              expected = reference_product(c.a, c.b);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], expected[i], 1e-3 * (1.0 + std::abs(expected[i]))) << i;
    }
  }
}

}  // namespace
}  // namespace loom
