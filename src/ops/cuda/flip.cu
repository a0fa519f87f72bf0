// CUDA flip: one grid-stride kernel, each output element read from its source (flip_backend.h)
// as a word of the dtype's size, so one kernel serves every dtype.
#include "loom/ops/flip_backend.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

template <typename Word>
__global__ void flip_kernel(const Word* x, Word* out, int64_t n, FlipRuns runs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = x[flip_source(i, runs)];
  }
}

template <typename Word>
void launch(const Tensor& x, const Tensor& out, const FlipRuns& runs, cudaStream_t stream) {
  const int64_t n = x.numel();
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32));
  flip_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const Word*>(x.raw_data()),
                                               static_cast<Word*>(out.raw_data()), n, runs);
  LOOM_CUDA_KERNEL_CHECK();
}

}  // namespace

void cuda_flip(const Tensor& x, const Tensor& out, const FlipRuns& runs) {
  const int device = x.device().index;
  cuda::DeviceGuard guard(device);
  const cudaStream_t stream = cuda::current_stream(device);
  switch (element_size(x.dtype())) {
    case 1:
      return launch<uint8_t>(x, out, runs, stream);
    case 2:
      return launch<uint16_t>(x, out, runs, stream);
    case 4:
      return launch<uint32_t>(x, out, runs, stream);
    case 8:
      return launch<uint64_t>(x, out, runs, stream);
  }
  LOOM_FAIL("flip: no element size ", element_size(x.dtype()));
}

}  // namespace loom::detail
