// cuBLAS handles, one per (thread, device), created on first use. The handle comes back bound
// to the device's current stream. Math mode: full FP32 by default (as PyTorch's matmul);
// setting the environment variable LOOM_ALLOW_TF32=1 lets float32 products use TF32 tensor
// cores (read once per process).
#pragma once

#include "loom/ops/cuda/cublas_library.h"

namespace loom::cuda {

cublasHandle_t blas_handle(int device);

}  // namespace loom::cuda
