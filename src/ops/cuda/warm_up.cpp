// The first CUDA step's one-time library work, for warm_up (ops/warm_up.h).
#include <cuda_runtime.h>

#include "loom/ops/cuda/blas_handle.h"
#include "loom/ops/cuda/cudnn_handle.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

// cuDNN initialises its heuristics on the process's first algorithm query, whatever the shape,
// so one query of a small convolution in each direction is enough.
void warm_up_cudnn(int device) {
  cudnnHandle_t handle = cuda::cudnn_handle(device);
  const cuda::TensorDescriptor x(kFloat32, 8, 3, 16, 16), y(kFloat32, 8, 8, 14, 14);
  const cuda::FilterDescriptor w(kFloat32, 8, 3, 3, 3);
  const cuda::ConvolutionDescriptor conv(kFloat32, 0, 0, 1, 1, 1, 1);
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t forward;
  LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, x.get(), w.get(), conv.get(),
                                                          y.get(), 1, &found, &forward));
  cudnnConvolutionBwdFilterAlgoPerf_t filter;
  LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      handle, x.get(), y.get(), conv.get(), w.get(), 1, &found, &filter));
  cudnnConvolutionBwdDataAlgoPerf_t data;
  LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w.get(), y.get(), conv.get(),
                                                               x.get(), 1, &found, &data));
}

// One 1x1 float GEMM on a stream of its own (nothing else of loom's waits for it), which loads
// the kernels a small dense layer's first GEMM would.
void warm_up_cublas(int device) {
  cublasHandle_t handle = cuda::blas_handle(device);
  cudaStream_t stream = nullptr;
  LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* buffer = nullptr;
  cudaError_t status = cudaMallocAsync(&buffer, 3 * sizeof(float), stream);
  if (status == cudaSuccess) status = cudaMemsetAsync(buffer, 0, 3 * sizeof(float), stream);
  cublasStatus_t gemm = CUBLAS_STATUS_SUCCESS;
  if (status == cudaSuccess) gemm = cuda::cublas().cublasSetStream(handle, stream);
  if (status == cudaSuccess && gemm == CUBLAS_STATUS_SUCCESS) {
    const float one = 1.0f, zero = 0.0f;
    gemm = cuda::cublas().cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, buffer, 1,
                                      buffer + 1, 1, &zero, buffer + 2, 1);
  }
  if (buffer != nullptr) cudaFreeAsync(buffer, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  LOOM_CUDA_CHECK(status);
  LOOM_LIBRARY_CHECK("cuBLAS", gemm, CUBLAS_STATUS_SUCCESS, cuda::cublas().cublasGetStatusString);
  LOOM_CUDA_CHECK(synced);
}

}  // namespace

void cuda_warm_up(int device) {
  cuda::DeviceGuard guard(device);
  LOOM_CUDA_CHECK(cudaFree(nullptr));  // the primary context, shared by every thread
  warm_up_cudnn(device);
  warm_up_cublas(device);
}

}  // namespace loom::detail
