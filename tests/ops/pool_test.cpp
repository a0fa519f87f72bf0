// Pooling on the CPU: the case table (pool_cases.h) against float64, plain loops and finite
// differences; hand-computed values, adaptive bins against loops, max pooling's winners and
// gradients against a float64 reference (ties, NaNs, byte and int64 window offsets), errors.
#include "loom/ops/pool_backend.h"
#include "pool_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Pool2d, testing::pool_cases, Cpu)

TEST(Pool2d, StrideDefaultsToKernel) {
  Tensor x = randn({1, 2, 64, 64});
  EXPECT_EQ(max_pool2d(x, 2).shape(), (Shape{1, 2, 32, 32}));
  EXPECT_EQ(max_pool2d(randn({1, 32, 21, 21}), 2).shape(), (Shape{1, 32, 10, 10}));  // seed_cnn
  EXPECT_EQ(avg_pool2d(x, {4, 2}).shape(), (Shape{1, 2, 16, 32}));
}

TEST(Pool2d, KnownSmallValues) {
  Tensor x = arange(1, 17, 1, kFloat64).reshape({1, 1, 4, 4});
  EXPECT_EQ(max_pool2d(x, 2).to_vector<double>(), (std::vector<double>{6, 8, 14, 16}));
  EXPECT_EQ(avg_pool2d(x, 2).to_vector<double>(), (std::vector<double>{3.5, 5.5, 11.5, 13.5}));
  // Padding 1, kernel 2, stride 2: the corner window holds x[0,0] = 1 and three zeros.
  EXPECT_EQ(avg_pool2d(x, 2, 2, 1).to_vector<double>()[0], 0.25);
  EXPECT_EQ(avg_pool2d(x, 2, 2, 1, false).to_vector<double>()[0], 1.0);
  EXPECT_EQ(max_pool2d(-x, 2, 2, 1).to_vector<double>()[0], -1.0);  // padding never wins
}

TEST(Pool2d, AdaptiveAndGlobalAverage) {
  Generator gen(9);
  Tensor x = randn({2, 3, 7, 5}, kFloat64, &gen);
  const auto xv = x.to_vector<double>();
  for (auto [oh, ow] :
       std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {1, 1}, {7, 5}, {4, 4}, {2, 5}}) {
    std::vector<double> ref;
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t y0 = i * 7 / oh, y1 = ((i + 1) * 7 + oh - 1) / oh;
          const int64_t x0 = j * 5 / ow, x1 = ((j + 1) * 5 + ow - 1) / ow;
          double s = 0;
          for (int64_t yy = y0; yy < y1; ++yy)
            for (int64_t xx = x0; xx < x1; ++xx) s += xv[(p * 7 + yy) * 5 + xx];
          ref.push_back(s / ((y1 - y0) * (x1 - x0)));
        }
    EXPECT_TENSOR_NEAR(adaptive_avg_pool2d(x, oh, ow), from_vector(ref, {2, 3, oh, ow}), 1e-12,
                       1e-12);
  }
  Tensor g = global_avg_pool2d(x);
  EXPECT_EQ(g.shape(), (Shape{2, 3, 1, 1}));
  double first = 0;
  for (int64_t i = 0; i < 35; ++i) first += xv[i];
  EXPECT_NEAR(g.to_vector<double>()[0], first / 35, 1e-12);
}

TEST(Pool2d, MaxGradientGoesToTheArgmax) {
  Tensor x = from_vector<double>({1, 5, 2, 0, 3, 4, 9, 8, 7}, {1, 1, 3, 3});
  x.set_requires_grad(true);
  // Overlapping 2x2 windows, stride 1: maxima 5, 5, 9, 8 -> x[1] gets 2, x[6] and x[7] 1.
  Tensor y = max_pool2d(x, 2, 1);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{5, 5, 9, 8}));
  y.backward(ones(y.shape(), kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 2, 0, 0, 0, 0, 1, 1, 0}));
  // On ties the first maximum (row-major) takes the whole gradient.
  Tensor tied = full({1, 1, 2, 2}, 3.0, kFloat64);
  tied.set_requires_grad(true);
  Tensor z = max_pool2d(tied, 2);
  z.backward(ones(z.shape(), kFloat64));
  EXPECT_EQ(tied.grad().to_vector<double>(), (std::vector<double>{1, 0, 0, 0}));
}

TEST(Pool2d, MaxWinnersAndGradientsMatchTheReference) {
  uint64_t seed = 200;
  for (const testing::MaxPoolCase& c : testing::max_pool_cases()) {
    for (DType dtype : {kFloat64, kFloat32}) {
      for (bool tied : {true, false}) {
        SCOPED_TRACE(testing::describe(c, dtype, tied));
        Generator gen(seed++);
        Tensor x = tied ? testing::tied_input(c.x, seed, dtype) : randn(c.x, dtype, &gen);
        x.set_requires_grad(true);
        const testing::MaxPoolReference ref =
            testing::reference_max_pool(x.detach(), c.k, c.s, c.p);
        const Tensor y = max_pool2d(x, c.k, c.s, c.p);
        EXPECT_TENSOR_NEAR(y, ref.y, 0, 0);  // a max is exact, NaN where a NaN won
        const Tensor w = randn(y.shape(), dtype, &gen);
        y.backward(w);
        const double tol = dtype == kFloat64 ? 1e-12 : 1e-6;
        EXPECT_TENSOR_NEAR(x.grad(), testing::reference_max_pool_grad(x, ref, w), tol, tol);
      }
    }
  }
}

// Windows of up to 255 taps keep one-byte offsets, larger ones int64; a winner at the last tap
// of the largest byte window (offset 254) or past 127 must still find its input pixel.
TEST(Pool2d, MaxWindowOffsetsAtTheirLimits) {
  auto geometry = [](int64_t kh, int64_t kw) {
    loom::detail::PoolGeometry g;
    g.y.kernel = kh, g.x.kernel = kw;
    return g;
  };
  EXPECT_EQ(loom::detail::max_pool_offset_dtype(geometry(2, 2)), kUInt8);
  EXPECT_EQ(loom::detail::max_pool_offset_dtype(geometry(15, 17)), kUInt8);
  EXPECT_EQ(loom::detail::max_pool_offset_dtype(geometry(16, 16)), kInt64);
  EXPECT_EQ(loom::detail::max_pool_offset_dtype(geometry(1, 300)), kInt64);
  struct Case {
    Size2 k;
    int64_t tap;  // where in the window the maximum lies
  };
  for (const Case& c : {Case{{15, 17}, 254}, Case{{15, 17}, 128}, Case{{15, 17}, 0}, Case{16, 255},
                        Case{16, 137}, Case{{1, 300}, 299}}) {
    SCOPED_TRACE("kernel " + std::to_string(c.k.h) + "x" + std::to_string(c.k.w) + " tap " +
                 std::to_string(c.tap));
    // Two planes, each a single window; the second plane's maximum sits one tap earlier.
    Tensor x = -rand({1, 2, c.k.h, c.k.w}, kFloat64) - 1;
    std::vector<double> xv = x.to_vector<double>();
    const int64_t taps = c.k.h * c.k.w;
    xv[c.tap] = 5, xv[taps + (c.tap + taps - 1) % taps] = 7;
    x = from_vector(xv, x.shape());
    x.set_requires_grad(true);
    const Tensor y = max_pool2d(x, c.k);
    EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{5, 7}));
    y.backward(from_vector<double>({2, 3}, y.shape()));
    std::vector<double> expected(2 * taps, 0.0);
    expected[c.tap] = 2, expected[taps + (c.tap + taps - 1) % taps] = 3;
    EXPECT_EQ(x.grad().to_vector<double>(), expected);
  }
}

TEST(Pool2d, Errors) {
  Tensor x = randn({1, 2, 6, 6});
  EXPECT_LOOM_ERROR(max_pool2d(randn({2, 6, 6}), 2), "input must be 4-D");
  EXPECT_LOOM_ERROR(avg_pool2d(randn({2, 6, 6}), 2), "avg_pool2d: input must be 4-D");
  EXPECT_LOOM_ERROR(max_pool2d(x, 7), "larger than the padded input");
  EXPECT_LOOM_ERROR(max_pool2d(x, {2, 7}), "width kernel 7");
  EXPECT_LOOM_ERROR(max_pool2d(x, 2, 1, 2), "at most half the kernel");
  EXPECT_LOOM_ERROR(avg_pool2d(x, 0), "must be >= 1");
  EXPECT_LOOM_ERROR(avg_pool2d(x, 2, -1), "must be >= 1");
  EXPECT_LOOM_ERROR(max_pool2d(x, 2, 2, -1), ">= 0");
  EXPECT_LOOM_ERROR(adaptive_avg_pool2d(x, 0, 2), "must be positive");
  EXPECT_LOOM_ERROR(global_avg_pool2d(randn({6, 6})), "input must be 4-D");
  EXPECT_LOOM_ERROR(max_pool2d(x.to(kInt64), 2), "floating point");
  EXPECT_LOOM_ERROR(max_pool2d(Tensor(), 2), "undefined");
}

}  // namespace
}  // namespace loom
