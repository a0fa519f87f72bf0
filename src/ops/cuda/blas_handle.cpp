// Lazily created cuBLAS handles per (thread, device); see blas_handle.h.
#include "loom/ops/cuda/blas_handle.h"

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::cuda {

namespace {

bool tf32_allowed() {
  static const bool allowed = [] {
    const char* value = std::getenv("LOOM_ALLOW_TF32");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return allowed;
}

// Destroys the thread's handles when the thread ends. Errors are ignored there: at process
// exit the CUDA context may already be gone.
struct ThreadHandles {
  std::unordered_map<int, cublasHandle_t> by_device;
  ~ThreadHandles() {
    for (auto& entry : by_device) cublas().cublasDestroy(entry.second);
  }
};

}  // namespace

cublasHandle_t blas_handle(int device) {
  thread_local ThreadHandles handles;
  auto it = handles.by_device.find(device);
  if (it == handles.by_device.end()) {
    DeviceGuard guard(device);
    cublasHandle_t handle = nullptr;
    LOOM_LIBRARY_CHECK("cuBLAS", cublas().cublasCreate(&handle), CUBLAS_STATUS_SUCCESS,
                       cublas().cublasGetStatusString);
    const cublasMath_t mode = tf32_allowed() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    LOOM_LIBRARY_CHECK("cuBLAS", cublas().cublasSetMathMode(handle, mode), CUBLAS_STATUS_SUCCESS,
                       cublas().cublasGetStatusString);
    it = handles.by_device.emplace(device, handle).first;
  }
  LOOM_LIBRARY_CHECK("cuBLAS", cublas().cublasSetStream(it->second, current_stream(device)),
                     CUBLAS_STATUS_SUCCESS, cublas().cublasGetStatusString);
  return it->second;
}

}  // namespace loom::cuda
