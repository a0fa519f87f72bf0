// One family of checks for every CUDA-library return code: the failing call, file and line go
// into the loom::Error. Include only from CUDA-enabled sources.
#pragma once

#include <cuda_runtime.h>

#include "loom/tensor/error.h"

namespace loom::cuda::detail {
[[noreturn]] void throw_cuda_error(const char* library, const char* call, const char* message,
                                   const char* file, int line);
}

#define LOOM_CUDA_CHECK(call)                                                                 \
  do {                                                                                        \
    const cudaError_t loom_status_ = (call);                                                  \
    if (loom_status_ != cudaSuccess) {                                                        \
      ::loom::cuda::detail::throw_cuda_error("CUDA", #call, cudaGetErrorString(loom_status_), \
                                             __FILE__, __LINE__);                             \
    }                                                                                         \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site.
#define LOOM_CUDA_KERNEL_CHECK() LOOM_CUDA_CHECK(cudaGetLastError())

// Checks for other libraries (cuBLAS, cuDNN, NCCL) take their status type, success value and
// message function: LOOM_LIBRARY_CHECK("cuBLAS", cublasSgemm(...), CUBLAS_STATUS_SUCCESS,
// cublasGetStatusString).
#define LOOM_LIBRARY_CHECK(library, call, success, to_string)                                   \
  do {                                                                                          \
    const auto loom_status_ = (call);                                                           \
    if (loom_status_ != (success)) {                                                            \
      ::loom::cuda::detail::throw_cuda_error(library, #call, to_string(loom_status_), __FILE__, \
                                             __LINE__);                                         \
    }                                                                                           \
  } while (0)
