// The Mandelbrot kernel: one thread per pixel, 32 pixels of a row per warp so the stores of a
// warp are contiguous. The arithmetic is mandelbrot_pixel, shared with the CPU loop.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/launchers.h"

namespace loom::gpu_basics::cuda_impl {
namespace {

__global__ void mandelbrot_kernel(MandelbrotSpec spec, int32_t* __restrict__ counts) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t y = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (x < spec.width && y < spec.height) counts[y * spec.width + x] = mandelbrot_pixel(spec, x, y);
}

}  // namespace

void mandelbrot(const MandelbrotSpec& spec, int32_t* counts, Stream stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((spec.width + block.x - 1) / block.x),
                  static_cast<unsigned>((spec.height + block.y - 1) / block.y));
  mandelbrot_kernel<<<grid, block, 0, stream>>>(spec, counts);
  GPU_BASICS_KERNEL_CHECK();
}

}  // namespace loom::gpu_basics::cuda_impl
