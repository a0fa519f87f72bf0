// Pooling as one case table for both devices: max and average pooling (padding counted and
// not) over non-square kernels, strides and paddings, windows that overlap and windows that
// cannot (max pooling's two backward kernels); max pooling's byte and int64 window offsets on
// distinct values and on ties with NaNs; adaptive and global average pooling. Each window case
// is also checked against pooling by its definition (plain loops).
#pragma once

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "max_pool_reference.h"
#include "parity.h"

namespace loom::testing {

enum class PoolKind { Max, AvgWithPad, AvgNoPad };

// Pooling by its definition: window of output (i, j) is rows i*sh - ph + [0, kh), clipped.
inline Tensor reference_pool(const Tensor& x, PoolKind kind, Size2 k, Size2 s, Size2 p) {
  const auto xv = x.to_vector<double>();
  const int64_t P = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OH = (H + 2 * p.h - k.h) / s.h + 1, OW = (W + 2 * p.w - k.w) / s.w + 1;
  std::vector<double> y;
  for (int64_t pl = 0; pl < P; ++pl)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t a = 0; a < k.h; ++a)
          for (int64_t b = 0; b < k.w; ++b) {
            const int64_t yy = i * s.h - p.h + a, xx = j * s.w - p.w + b;
            if (yy >= H + p.h || xx >= W + p.w) continue;  // beyond the padding: not counted
            ++padded;
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
            const double v = xv[(pl * H + yy) * W + xx];
            best = std::max(best, v), sum += v, ++inside;
          }
        y.push_back(kind == PoolKind::Max ? best
                                          : sum / (kind == PoolKind::AvgWithPad ? padded : inside));
      }
  return from_vector(y, {x.size(0), x.size(1), OH, OW});
}

// Distinct values (a shuffled ramp plus noise), so no max-pool window has a near-tie that a
// finite difference could flip.
inline Input distinct(const Shape& shape) {
  return {[shape](uint64_t seed) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<double> v(n);
    std::mt19937_64 rng(seed);
    for (int64_t i = 0; i < n; ++i) {
      v[i] =
          0.1 * static_cast<double>(i) + 0.01 * std::uniform_real_distribution<double>(0, 1)(rng);
    }
    std::shuffle(v.begin(), v.end(), rng);
    return from_vector(v, shape);
  }};
}

// Integers in [-2, 2] and NaNs (max_pool_reference.h's tied_input): no gradient check.
inline Input tied(const Shape& shape) {
  return {[shape](uint64_t seed) { return tied_input(shape, seed, kFloat64); }};
}

inline std::string window_str(const Shape& x, Size2 k, Size2 s, Size2 p) {
  auto pair = [](Size2 v) { return std::to_string(v.h) + "x" + std::to_string(v.w); };
  return shape_str(x) + " kernel " + pair(k) + " stride " + pair(s) + " pad " + pair(p);
}

inline std::vector<ParityCase> pool_cases() {
  struct Window {
    Shape x;
    Size2 k, s, p;
  };
  const std::vector<Window> windows = {
      {{2, 3, 8, 8}, 2, 2, 0},
      {{1, 2, 7, 9}, {3, 2}, {2, 1}, {1, 1}},
      {{2, 1, 5, 6}, 3, 1, 1},
      {{2, 4, 9, 7}, 3, 1, 1},
      {{1, 2, 9, 7}, {2, 3}, {3, 2}, {1, 0}},
      {{1, 1, 7, 7}, 3, 2, 1},
      {{3, 2, 10, 10}, 2, 2, 0},
      {{3, 32, 21, 21}, 2, 2, 0},  // seed_cnn's
      // Windows that cannot overlap (max pooling's cell backward): exact cover, gaps between
      // windows, padding, and uncovered trailing rows/columns.
      {{4, 8, 62, 62}, 2, 2, 0},
      {{2, 3, 10, 11}, 2, 3, 1},
      {{2, 4, 9, 9}, 3, 3, 1},
      {{1, 2, 9, 7}, {3, 2}, {3, 2}, 0},
  };
  std::vector<ParityCase> cases;
  for (const Window& w : windows) {
    const Size2 k = w.k, s = w.s, p = w.p;
    int64_t n = 1;
    for (int64_t d : w.x) n *= d;
    const Input x = n <= 2500 ? distinct(w.x) : normal(w.x);
    const std::string where = window_str(w.x, k, s, p);
    cases.push_back({"max_pool2d " + where, {x}, [=](const std::vector<Tensor>& in) {
                       return max_pool2d(in[0], k, s, p);
                     }});
    cases.back().reference = [=](const std::vector<Tensor>& in) {
      return reference_pool(in[0], PoolKind::Max, k, s, p);
    };
    cases.push_back({"avg_pool2d " + where, {x}, [=](const std::vector<Tensor>& in) {
                       return avg_pool2d(in[0], k, s, p);
                     }});
    cases.back().reference = [=](const std::vector<Tensor>& in) {
      return reference_pool(in[0], PoolKind::AvgWithPad, k, s, p);
    };
    cases.push_back(
        {"avg_pool2d without the padding " + where, {x}, [=](const std::vector<Tensor>& in) {
           return avg_pool2d(in[0], k, s, p, false);
         }});
    cases.back().reference = [=](const std::vector<Tensor>& in) {
      return reference_pool(in[0], PoolKind::AvgNoPad, k, s, p);
    };
  }
  // The reference's cases and two of a training step's size: classic_cnn's first pool (2x2/2),
  // and overlapping 3x3/2 windows with padding over odd sizes.
  std::vector<MaxPoolCase> max_cases = max_pool_cases();
  max_cases.push_back({{8, 32, 64, 64}, 2, 2, 0});
  max_cases.push_back({{4, 16, 63, 65}, 3, 2, 1});
  for (const MaxPoolCase& m : max_cases) {
    const Size2 k = m.k, s = m.s, p = m.p;
    int64_t n = 1;
    for (int64_t d : m.x) n *= d;
    const Function f = [=](const std::vector<Tensor>& in) { return max_pool2d(in[0], k, s, p); };
    const Function reference = [=](const std::vector<Tensor>& in) {
      return reference_max_pool(in[0], k, s, p).y;
    };
    const std::string where = window_str(m.x, k, s, p);
    ParityCase values{"max_pool2d offsets " + where,
                      {n <= 2500 ? distinct(m.x) : normal(m.x)},
                      f,
                      {kFloat32, kFloat64}};
    values.reference = reference;
    cases.push_back(values);
    ParityCase ties{"max_pool2d offsets, ties and NaNs " + where,
                    {tied(m.x)},
                    f,
                    {kFloat32, kFloat64},
                    Gradcheck::Off};
    ties.reference = reference;
    cases.push_back(ties);
  }
  for (const Shape& x : {Shape{2, 5, 11, 9}, Shape{2, 2, 7, 5}}) {
    for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {3, 2}, {4, 4}}) {
      cases.push_back({"adaptive_avg_pool2d to " + std::to_string(oh) + "x" + std::to_string(ow) +
                           " of " + shape_str(x),
                       {normal(x)},
                       [oh = oh, ow = ow](const std::vector<Tensor>& in) {
                         return adaptive_avg_pool2d(in[0], oh, ow);
                       }});
    }
    cases.push_back({"global_avg_pool2d " + shape_str(x),
                     {normal(x)},
                     [](const std::vector<Tensor>& in) { return global_avg_pool2d(in[0]); }});
  }
  return cases;
}

}  // namespace loom::testing
