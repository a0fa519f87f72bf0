// dropout's mask application on CUDA (the draws come from loom::rand, as on the CPU).
#include <type_traits>

#include "loom/ops/dropout_backend.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

template <typename T, typename U>
__global__ void dropout_kernel(const T* src, const U* u, double p, double scale, T* out,
                               int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = dropout_at(src[i], u[i], p, scale);
  }
}

}  // namespace

void cuda_dropout_apply(const Tensor& src, const Tensor& u, double p, const Tensor& out) {
  cuda::DeviceGuard guard(src.device().index);
  const int64_t n = src.numel();
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32);
  LOOM_DISPATCH_FLOATING_AND_BF16(src.dtype(), "dropout", [&] {
    using U = std::conditional_t<std::is_same<scalar_t, BFloat16>::value, float, scalar_t>;
    dropout_kernel<<<blocks, kThreads, 0, cuda::current_stream(src.device().index)>>>(
        src.data_ptr<scalar_t>(), u.data_ptr<U>(), p, 1.0 / (1.0 - p), out.data_ptr<scalar_t>(), n);
    LOOM_CUDA_KERNEL_CHECK();
  });
}

}  // namespace loom::detail
