// Fused Adam/AdamW on CUDA: one multi-tensor launch updates param, exp_avg and exp_avg_sq of
// many tensors with the element rule of update_math.h.
#include "loom/optim/cuda/multi_tensor.cuh"
#include "loom/optim/update_math.h"
#include "loom/tensor/dtype.h"

namespace loom::optim::detail {

namespace {

template <typename T>
__global__ void __launch_bounds__(kChunkThreads)
    adam_kernel(TensorListMeta<4> meta, AdamCoeffs<T> value, const AdamConfig* replayed) {
  const AdamCoeffs<T> c = replayed != nullptr ? adam_coeffs<T>(*replayed) : value;
  int tensor;
  int64_t n;
  const int64_t start = chunk_start(meta, tensor, n);
  T* p = static_cast<T*>(meta.ptrs[0][tensor]) + start;
  const T* g = static_cast<const T*>(meta.ptrs[1][tensor]) + start;
  T* m = static_cast<T*>(meta.ptrs[2][tensor]) + start;
  T* v = static_cast<T*>(meta.ptrs[3][tensor]) + start;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) adam_element(p[i], g[i], m[i], v[i], c);
}

}  // namespace

void cuda_fused_adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                     const AdamConfig& config) {
  if (params.empty()) return;
  const StepConfig<AdamConfig> step = step_config(params.front(), config);
  if (!step.launch) return;
  LOOM_DISPATCH_FLOATING(params.front().dtype(), "Adam.step", [&] {
    using T = scalar_t;
    const AdamCoeffs<T> c = adam_coeffs<T>(config);
    multi_tensor_apply<4>({&params, &grads, &exp_avgs, &exp_avg_sqs},
                          [&](const TensorListMeta<4>& meta, int blocks, cudaStream_t stream) {
                            adam_kernel<T>
                                <<<blocks, kChunkThreads, 0, stream>>>(meta, c, step.replayed);
                          });
  });
}

}  // namespace loom::optim::detail
