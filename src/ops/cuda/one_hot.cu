// CUDA one_hot. Indices are range-checked on the device: the kernel records the first bad value
// it meets in a two-word flag, and the host reads that flag once after the launch. Reading it
// waits for the stream, the price of reporting a bad label as an error instead of writing out of
// bounds; one_hot is used on label batches, not inside a training step's hot loop.
#include "loom/ops/one_hot_backend.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

// flag[0]: 0 while every index is valid, 1 once one is not; flag[1]: that index's value.
template <typename I, typename T>
__global__ void one_hot_kernel(const I* idx, int64_t n, T* out, int64_t classes,
                               unsigned long long* flag) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = static_cast<int64_t>(idx[i]);
    if (c >= 0 && c < classes) {
      out[i * classes + c] = T(1);
    } else if (atomicCAS(&flag[0], 0ULL, 1ULL) == 0ULL) {
      flag[1] = static_cast<unsigned long long>(c);
    }
  }
}

}  // namespace

void cuda_one_hot(const Tensor& indices, const Tensor& out, int64_t classes) {
  const int device = indices.device().index;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  const Tensor flag = zeros({2}, TensorOptions(kInt64).device(indices.device()));
  auto* flag_ptr = static_cast<unsigned long long*>(flag.raw_data());
  const int64_t n = indices.numel();
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32));
  LOOM_DISPATCH_ALL_AND_BF16(out.dtype(), "one_hot", [&] {
    if (indices.dtype() == kInt64) {
      one_hot_kernel<<<blocks, kThreads, 0, stream>>>(indices.data_ptr<int64_t>(), n,
                                                      out.data_ptr<scalar_t>(), classes, flag_ptr);
    } else {
      one_hot_kernel<<<blocks, kThreads, 0, stream>>>(indices.data_ptr<int32_t>(), n,
                                                      out.data_ptr<scalar_t>(), classes, flag_ptr);
    }
    LOOM_CUDA_KERNEL_CHECK();
  });
  const std::vector<int64_t> status = flag.to_vector<int64_t>();  // waits for the kernel
  LOOM_CHECK(status[0] == 0, "one_hot: index ", status[1], " is out of range for num_classes ",
             classes);
}

}  // namespace loom::detail
