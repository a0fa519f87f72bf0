// Max pooling by its definition, in double, for the pool tests of both devices: every window's
// taps in row-major order, padding skipped, the first maximum winning; the cases and the
// inputs (ties, NaNs) that exercise max_pool2d's saved window offsets.
#pragma once

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "testing.h"

namespace loom::testing {

struct MaxPoolCase {
  Shape x;
  Size2 k, s, p;
};

// Non-overlapping 2x2/2 (exact cover, and odd sizes leaving a last row and column in no
// window), gaps between windows (2/3), overlapping 3/2 with padding and a clipped last window,
// non-square kernels with padding on one axis, 15x17 = 255 taps (the largest byte offsets) and
// 16x16 = 256 taps (the int64 fallback), both with strides that overlap and that do not.
inline std::vector<MaxPoolCase> max_pool_cases() {
  return {
      {{2, 3, 8, 8}, 2, 2, 0},
      {{2, 3, 9, 7}, 2, 2, 0},
      {{1, 4, 11, 10}, 2, 3, 0},
      {{2, 2, 11, 10}, 2, 3, 1},
      {{2, 3, 9, 9}, 3, 2, 1},
      {{1, 2, 8, 10}, 3, 2, 0},
      {{1, 3, 9, 7}, {3, 2}, {2, 1}, {1, 0}},
      {{1, 2, 7, 9}, {2, 3}, {2, 3}, {0, 1}},
      {{1, 2, 17, 19}, {15, 17}, {1, 2}, {0, 0}},
      {{1, 2, 30, 34}, {15, 17}, {15, 17}, {0, 0}},
      {{1, 2, 18, 20}, 16, {2, 3}, 0},
      {{1, 2, 32, 33}, 16, 16, {8, 0}},
  };
}

// "[1, 2, 9, 7] kernel 3x2 stride 2x1 pad 1x0 tied float32", for SCOPED_TRACE.
inline std::string describe(const MaxPoolCase& c, DType dtype, bool tied) {
  auto pair = [](Size2 v) { return std::to_string(v.h) + "x" + std::to_string(v.w); };
  return shape_str(c.x) + " kernel " + pair(c.k) + " stride " + pair(c.s) + " pad " + pair(c.p) +
         (tied ? " tied " : " random ") + dtype_name(dtype);
}

struct MaxPoolReference {
  Tensor y;                     // float64 [N, C, OH, OW]
  std::vector<int64_t> winner;  // flat index into x of each output's winner
};

// A later tap wins only when strictly greater, so on ties the first maximum wins, and a NaN
// wins only as its window's first tap (then nothing is greater than it).
inline MaxPoolReference reference_max_pool(const Tensor& x, Size2 k, Size2 s, Size2 p) {
  const std::vector<double> xv = x.contiguous().to_vector<double>();
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OH = (H + 2 * p.h - k.h) / s.h + 1, OW = (W + 2 * p.w - k.w) / s.w + 1;
  std::vector<double> y;
  MaxPoolReference r;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        int64_t at = -1;
        for (int64_t a = 0; a < k.h; ++a)
          for (int64_t b = 0; b < k.w; ++b) {
            const int64_t yy = i * s.h - p.h + a, xx = j * s.w - p.w + b;
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;  // padding never wins
            const int64_t here = (pl * H + yy) * W + xx;
            if (at < 0 || xv[here] > xv[at]) at = here;
          }
        y.push_back(xv[at]);
        r.winner.push_back(at);
      }
  r.y = from_vector(y, {x.size(0), x.size(1), OH, OW});
  return r;
}

// The gradient of <max_pool2d(x), w> with respect to x: w[o] added at winner[o], in order.
inline Tensor reference_max_pool_grad(const Tensor& x, const MaxPoolReference& r, const Tensor& w) {
  const std::vector<double> wv = w.contiguous().to_vector<double>();
  std::vector<double> dx(x.numel(), 0.0);
  for (size_t o = 0; o < wv.size(); ++o) dx[r.winner[o]] += wv[o];
  return from_vector(dx, x.shape());
}

// Integers in [-2, 2], so most windows hold several equal maxima, and a NaN at about one
// position in 16 (some windows start with one, others meet one later).
inline Tensor tied_input(const Shape& shape, uint64_t seed, DType dtype) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> value(-2, 2), nan_one_in(0, 15);
  std::vector<double> v(n);
  for (double& e : v) {
    e = nan_one_in(rng) == 0 ? std::numeric_limits<double>::quiet_NaN() : value(rng);
  }
  return from_vector(v, shape, TensorOptions(dtype));
}

}  // namespace loom::testing
