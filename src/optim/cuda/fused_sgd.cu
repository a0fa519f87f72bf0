// Fused SGD on CUDA: one multi-tensor launch updates the params (and momentum buffers) of many
// tensors with the element rule of update_math.h.
#include "loom/optim/cuda/multi_tensor.cuh"
#include "loom/optim/update_math.h"
#include "loom/tensor/dtype.h"

namespace loom::optim::detail {

namespace {

// Depth 3 carries momentum buffers as the third list; depth 2 runs without momentum.
template <int Depth, typename T>
__global__ void __launch_bounds__(kChunkThreads)
    sgd_kernel(TensorListMeta<Depth> meta, SgdCoeffs<T> value, const SgdConfig* replayed) {
  const SgdCoeffs<T> c = replayed != nullptr ? sgd_coeffs<T>(*replayed) : value;
  int tensor;
  int64_t n;
  const int64_t start = chunk_start(meta, tensor, n);
  T* p = static_cast<T*>(meta.ptrs[0][tensor]) + start;
  const T* g = static_cast<const T*>(meta.ptrs[1][tensor]) + start;
  T* buf = Depth == 3 ? static_cast<T*>(meta.ptrs[Depth - 1][tensor]) + start : nullptr;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sgd_element(p[i], g[i], buf ? buf + i : nullptr, c);
}

}  // namespace

void cuda_fused_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                    const std::vector<Tensor>& momentum_buffers, const SgdConfig& config) {
  if (params.empty()) return;
  const StepConfig<SgdConfig> step = step_config(params.front(), config);
  if (!step.launch) return;
  LOOM_DISPATCH_FLOATING(params.front().dtype(), "SGD.step", [&] {
    using T = scalar_t;
    const SgdCoeffs<T> c = sgd_coeffs<T>(config);
    if (c.use_momentum) {
      multi_tensor_apply<3>({&params, &grads, &momentum_buffers},
                            [&](const TensorListMeta<3>& meta, int blocks, cudaStream_t stream) {
                              sgd_kernel<3, T>
                                  <<<blocks, kChunkThreads, 0, stream>>>(meta, c, step.replayed);
                            });
    } else {
      multi_tensor_apply<2>(
          {&params, &grads}, [&](const TensorListMeta<2>& meta, int blocks, cudaStream_t stream) {
            sgd_kernel<2, T><<<blocks, kChunkThreads, 0, stream>>>(meta, c, step.replayed);
          });
    }
  });
}

}  // namespace loom::optim::detail
