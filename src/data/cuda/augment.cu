// The GPU affine warp: one thread per output element of a uint8 NHWC batch already on the
// device, the same per-pixel formula as the CPU (augment_kernel.h), float NCHW out.
#include <algorithm>

#include "loom/data/augment.h"
#include "loom/data/augment_kernel.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::data::detail {

namespace {

constexpr int kThreads = 256;

// One thread per output pixel: consecutive threads take consecutive columns of one row, so each
// channel plane's float stores coalesce; the uint8 reads of neighbouring columns share lines.
__global__ void warp_kernel(const uint8_t* images, const double* transforms, WarpConstants k,
                            int64_t n, float* out) {
  const int64_t plane = k.h * k.w;
  const int64_t total = n * plane;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = idx / plane, p = idx % plane;
    warp_pixel(images + s * plane * k.c, k, transforms + 7 * s, p / k.w, p % k.w,
               out + s * k.c * plane + p, plane);
  }
}

}  // namespace

Tensor augment_batch_cuda(const Tensor& images, const Tensor& transforms,
                          const AugmentOptions& options) {
  const int device = images.device().index;
  cuda::DeviceGuard guard(device);
  const Tensor src = images.contiguous(), tr = transforms.contiguous();
  const int64_t n = src.size(0), h = src.size(1), w = src.size(2), c = src.size(3);
  Tensor out = empty({n, c, h, w}, TensorOptions(kFloat32).device(images.device()));
  const int64_t total = n * h * w;  // one thread per output pixel
  if (total == 0) return out;
  const WarpConstants k = warp_constants(options, h, w, c);
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 65535LL * 32);
  warp_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, cuda::current_stream(device)>>>(
      src.data_ptr<uint8_t>(), tr.data_ptr<double>(), k, n, out.data_ptr<float>());
  LOOM_CUDA_KERNEL_CHECK();
  return out;
}

}  // namespace loom::data::detail
