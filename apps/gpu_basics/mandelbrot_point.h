// The Mandelbrot iteration of one pixel, shared by the CPU loop and the CUDA kernel so both
// compute the same thing. It follows the seed's Python (complex doubles, z = z*z + c, escape
// when |z|^2 >= 4, count = iterations before escape) and rounds every operation on its own:
// on the GPU the _rn intrinsics forbid fused multiply-adds, so CPU and GPU counts agree exactly.
#pragma once

#include <loom/tensor/host_device.h>

#include <cstdint>

namespace loom::gpu_basics {

// The seed's image: 1536x1024 pixels of the rectangle [-2, 1] x [-1, 1], 20 iterations.
struct MandelbrotSpec {
  int64_t width = 1536;
  int64_t height = 1024;
  int32_t max_iters = 20;
  double x_min = -2.0;
  double x_max = 1.0;
  double y_min = -1.0;
  double y_max = 1.0;
};

namespace detail {
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
#else
inline double mul(double a, double b) { return a * b; }
inline double add(double a, double b) { return a + b; }
inline double sub(double a, double b) { return a - b; }
#endif
}  // namespace detail

// Coordinate of pixel `index` of `extent` along [lo, hi): lo + index * ((hi - lo) / extent).
LOOM_HOST_DEVICE double mandelbrot_coordinate(double lo, double hi, int64_t extent, int64_t index) {
  const double step = (hi - lo) / static_cast<double>(extent);
  return detail::add(lo, detail::mul(static_cast<double>(index), step));
}

// Iterations of z <- z^2 + c from z = 0 before |z|^2 >= 4; max_iters if it never escapes.
LOOM_HOST_DEVICE int32_t mandelbrot_count(double c_re, double c_im, int32_t max_iters) {
  using detail::add;
  using detail::mul;
  using detail::sub;
  double re = 0.0;
  double im = 0.0;
  for (int32_t i = 0; i < max_iters; ++i) {
    const double next_re = add(sub(mul(re, re), mul(im, im)), c_re);
    const double next_im = add(add(mul(re, im), mul(im, re)), c_im);
    re = next_re;
    im = next_im;
    if (add(mul(re, re), mul(im, im)) >= 4.0) return i;
  }
  return max_iters;
}

LOOM_HOST_DEVICE int32_t mandelbrot_pixel(const MandelbrotSpec& spec, int64_t x, int64_t y) {
  return mandelbrot_count(mandelbrot_coordinate(spec.x_min, spec.x_max, spec.width, x),
                          mandelbrot_coordinate(spec.y_min, spec.y_max, spec.height, y),
                          spec.max_iters);
}

}  // namespace loom::gpu_basics
