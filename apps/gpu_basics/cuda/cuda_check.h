// The return-code checks of loom-gpu-basics' own CUDA code (its kernels, cuBLAS and the device
// queries): a failing call throws loom::Error naming the library, its message, the call, file
// and line. Built on loom's public LOOM_FAIL; loom's own CUDA checks are internal to libloom.
#pragma once

#include <cuda_runtime.h>
#include <loom/tensor/error.h>

#define GPU_BASICS_CUDA_CHECK(call)                                                            \
  do {                                                                                         \
    const cudaError_t gpu_basics_status_ = (call);                                             \
    if (gpu_basics_status_ != cudaSuccess) {                                                   \
      LOOM_FAIL("CUDA error: ", cudaGetErrorString(gpu_basics_status_), " in ", #call, " at ", \
                __FILE__, ":", __LINE__);                                                      \
    }                                                                                          \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site.
#define GPU_BASICS_KERNEL_CHECK() GPU_BASICS_CUDA_CHECK(cudaGetLastError())

// For cuBLAS calls (the file that uses it includes <cublas_v2.h>).
#define GPU_BASICS_CUBLAS_CHECK(call)                                                       \
  do {                                                                                      \
    const cublasStatus_t gpu_basics_status_ = (call);                                       \
    if (gpu_basics_status_ != CUBLAS_STATUS_SUCCESS) {                                      \
      LOOM_FAIL("cuBLAS error: ", cublasGetStatusString(gpu_basics_status_), " in ", #call, \
                " at ", __FILE__, ":", __LINE__);                                           \
    }                                                                                       \
  } while (0)
