// conv2d on the CPU: values against a direct 7-loop convolution in double, 'same'/'valid'
// geometry, float64 gradient checks over strides, paddings, dilations and odd sizes, errors.
#include <array>

#include "testing.h"

namespace loom {
namespace {

using testing::gradcheck;
using testing::random_leaf;

struct Pads {
  int64_t top, bottom, left, right;
};

// The definition: y[n,o,i,j] = b[o] + sum_{c,p,q} x[n,c,i*sh-top+p*dh, j*sw-left+q*dw] w[o,c,p,q].
Tensor reference_conv(const Tensor& x, const Tensor& w, const Tensor& b, std::array<int64_t, 2> s,
                      Pads pad, std::array<int64_t, 2> d) {
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>(w.size(0), 0.0);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), KH = w.size(2), KW = w.size(3);
  const int64_t OH = (H + pad.top + pad.bottom - d[0] * (KH - 1) - 1) / s[0] + 1;
  const int64_t OW = (W + pad.left + pad.right - d[1] * (KW - 1) - 1) / s[1] + 1;
  std::vector<double> y(N * O * OH * OW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = bv[o];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q) {
                const int64_t yy = i * s[0] - pad.top + p * d[0],
                              xx = j * s[1] - pad.left + q * d[1];
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                acc += xv[((n * C + c) * H + yy) * W + xx] * wv[((o * C + c) * KH + p) * KW + q];
              }
          y[((n * O + o) * OH + i) * OW + j] = acc;
        }
  return from_vector(y, {N, O, OH, OW});
}

struct Case {
  Shape x, w;
  Conv2dOptions opt;
  Pads pads;  // what opt should amount to
  bool bias;
};

std::vector<Case> cases() {
  return {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, Conv2dOptions(), {0, 0, 0, 0}, true},
      {{1, 2, 9, 8}, {3, 2, 3, 2}, Conv2dOptions().stride(2).padding(1), {1, 1, 1, 1}, false},
      {{2, 3, 10, 11}, {2, 3, 3, 3}, Conv2dOptions().stride(3), {0, 0, 0, 0}, true},
      {{1, 2, 9, 7}, {2, 2, 3, 3}, Conv2dOptions().dilation(2).padding(2, 1), {2, 2, 1, 1}, true},
      {{2, 1, 5, 5}, {3, 1, 2, 2}, Conv2dOptions().padding(Padding::Same), {0, 1, 0, 1}, true},
      {{1, 2, 7, 6}, {2, 2, 3, 3}, Conv2dOptions().padding(Padding::Same), {1, 1, 1, 1}, false},
      // Keras 'same' with stride 2: out = ceil(7 / 2) = 4, total pad 2 (1, 1) and ceil(6 / 2) = 3,
      // total pad 1 (0 before, 1 after).
      {{1, 2, 7, 6},
       {3, 2, 3, 3},
       Conv2dOptions().stride(2).padding(Padding::Same),
       {1, 1, 0, 1},
       true},
      {{2, 3, 8, 8},
       {2, 3, 3, 3},
       Conv2dOptions().stride(3).padding(Padding::Valid),
       {0, 0, 0, 0},
       true},
      {{1, 3, 5, 4}, {4, 3, 1, 1}, Conv2dOptions(), {0, 0, 0, 0}, true},  // pointwise fast path
      {{2, 2, 6, 7},
       {3, 2, 2, 3},
       Conv2dOptions().stride(1, 2).dilation(2, 1).padding(1, 0),
       {1, 1, 0, 0},
       false},
  };
}

TEST(Conv2d, MatchesDirectConvolution) {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    for (DType dtype : {kFloat64, kFloat32}) {
      Generator gen(seed++);
      Tensor x = randn(c.x, dtype, &gen), w = randn(c.w, dtype, &gen);
      Tensor b = c.bias ? randn({c.w[0]}, dtype, &gen) : Tensor();
      Tensor y = conv2d(x, w, b, c.opt);
      Tensor ref = reference_conv(x, w, b, c.opt.stride_, c.pads, c.opt.dilation_);
      const double tol = dtype == kFloat64 ? 1e-12 : 1e-5;
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TENSOR_NEAR(y, ref, tol, tol);
    }
  }
}

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

TEST(Conv2d, GradientsMatchFiniteDifferences) {
  uint64_t seed = 300;
  for (const Case& c : cases()) {
    Tensor x = random_leaf(c.x, seed++);
    Tensor w = random_leaf(c.w, seed++);
    Tensor b = c.bias ? random_leaf({c.w[0]}, seed++) : Tensor();
    const Conv2dOptions opt = c.opt;
    const std::string problem =
        gradcheck([opt](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], opt); },
                  {x, w, b});
    EXPECT_TRUE(problem.empty()) << "x " << shape_str(c.x) << " w " << shape_str(c.w) << ": "
                                 << problem;
  }
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
