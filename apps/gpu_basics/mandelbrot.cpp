// Mandelbrot images: the spec checks, the CPU loop over pixels and the CUDA dispatch.
#include "mandelbrot.h"

#include <loom/ops/dispatch.h>
#include <loom/tensor/parallel.h>

#include "cuda/launchers.h"
#include "device_info.h"

namespace loom::gpu_basics {

constexpr int64_t kMaxSide = int64_t{1} << 16;
constexpr int32_t kMaxIters = 1 << 20;

void check_mandelbrot_spec(const MandelbrotSpec& spec) {
  LOOM_CHECK(spec.width >= 1 && spec.width <= kMaxSide, "mandelbrot: width must be in [1, ",
             kMaxSide, "], got ", spec.width);
  LOOM_CHECK(spec.height >= 1 && spec.height <= kMaxSide, "mandelbrot: height must be in [1, ",
             kMaxSide, "], got ", spec.height);
  LOOM_CHECK(spec.max_iters >= 1 && spec.max_iters <= kMaxIters,
             "mandelbrot: iters must be in [1, ", kMaxIters, "], got ", spec.max_iters);
  LOOM_CHECK(spec.x_min < spec.x_max && spec.y_min < spec.y_max, "mandelbrot: empty rectangle [",
             spec.x_min, ", ", spec.x_max, "] x [", spec.y_min, ", ", spec.y_max, "]");
}

Tensor mandelbrot(const MandelbrotSpec& spec, Device device) {
  check_mandelbrot_spec(spec);
  check_fits(spec.width * spec.height * 4, device, "mandelbrot");
  Tensor counts = empty({spec.height, spec.width}, TensorOptions(kInt32).device(device));
  mandelbrot_into(spec, counts);
  return counts;
}

void mandelbrot_into(const MandelbrotSpec& spec, const Tensor& counts) {
  check_mandelbrot_spec(spec);
  LOOM_CHECK(counts.dtype() == kInt32 && counts.is_contiguous() &&
                 counts.shape() == (Shape{spec.height, spec.width}),
             "mandelbrot: counts must be a contiguous int32 tensor of shape [", spec.height, ", ",
             spec.width, "], got ", dtype_name(counts.dtype()), " ", shape_str(counts.shape()));
  int32_t* out = counts.data_ptr<int32_t>();
  if (counts.is_cuda()) {
    LOOM_CUDA_DISPATCH("mandelbrot", cuda_impl::mandelbrot(
                                         spec, out, cuda::current_stream(counts.device().index)));
    return;
  }
  // One row per task: rows near the set take longer, dynamic scheduling evens that out.
  const int64_t height = spec.height;
  const int64_t width = spec.width;
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) out[y * width + x] = mandelbrot_pixel(spec, x, y);
  }
}

std::vector<uint8_t> counts_to_gray(const Tensor& counts, int32_t max_iters) {
  LOOM_CHECK(counts.dtype() == kInt32, "counts_to_gray: counts must be int32, got ",
             dtype_name(counts.dtype()));
  LOOM_CHECK(max_iters >= 1, "counts_to_gray: max_iters must be positive, got ", max_iters);
  const std::vector<int32_t> values = counts.to_vector<int32_t>();
  std::vector<uint8_t> gray(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = std::min<int64_t>(std::max<int32_t>(values[i], 0), max_iters);
    gray[i] = static_cast<uint8_t>(v * 255 / max_iters);
  }
  return gray;
}

}  // namespace loom::gpu_basics
