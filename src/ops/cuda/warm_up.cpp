// The CUDA context and the libraries' first handles, for warm_up (ops/warm_up.h).
#include <cuda_runtime.h>

#include "loom/ops/cuda/blas_handle.h"
#include "loom/ops/cuda/cudnn_handle.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

void cuda_warm_up(int device) {
  cuda::DeviceGuard guard(device);
  LOOM_CUDA_CHECK(cudaFree(nullptr));  // the primary context, shared by every thread
  cuda::cudnn_handle(device);          // loads cuDNN's libraries (the handle stays this thread's)
  cuda::blas_handle(device);
}

}  // namespace loom::detail
