// cuBLAS as the matmul reference: one handle per device, created on first use and kept for
// the life of the process (creating one costs milliseconds and allocates its workspace).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/launchers.h"

namespace loom::gpu_basics::cuda_impl {
namespace {

cublasHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::vector<cublasHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  if (device >= static_cast<int>(handles.size())) handles.resize(device + 1, nullptr);
  if (handles[device] == nullptr) {
    loom::cuda::DeviceGuard guard(device);
    GPU_BASICS_CUBLAS_CHECK(cublasCreate(&handles[device]));
  }
  return handles[device];
}

}  // namespace

void matmul_cublas(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                   bool tf32, int device, Stream stream) {
  cublasHandle_t handle = handle_for(device);
  GPU_BASICS_CUBLAS_CHECK(cublasSetStream(handle, stream));
  // cuBLAS is column-major: a row-major [r, c] matrix is its [c, r] transpose. So the row-major
  // product C = A B is computed as the column-major C^T [n, m] = B^T [n, k] A^T [k, m].
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  GPU_BASICS_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                                       static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                       CUDA_R_32F, static_cast<int>(n), a, CUDA_R_32F,
                                       static_cast<int>(k), &beta, c, CUDA_R_32F,
                                       static_cast<int>(n), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace loom::gpu_basics::cuda_impl
