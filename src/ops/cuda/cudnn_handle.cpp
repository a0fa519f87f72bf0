// cuDNN handles per (thread, device) and the RAII descriptors of cudnn_handle.h.
#include "loom/ops/cuda/cudnn_handle.h"

#include <unordered_map>

#include "loom/tensor/cuda/runtime.h"

namespace loom::cuda {

cudnnHandle_t cudnn_handle(int device) {
  // Handles are never destroyed: destroying them from thread_local destructors at process exit
  // can run after the CUDA driver has shut down. One handle per thread and device is small.
  thread_local std::unordered_map<int, cudnnHandle_t> handles;
  auto it = handles.find(device);
  if (it == handles.end()) {
    DeviceGuard guard(device);
    cudnnHandle_t handle = nullptr;
    LOOM_CUDNN_CHECK(cudnnCreate(&handle));
    it = handles.emplace(device, handle).first;
  }
  LOOM_CUDNN_CHECK(cudnnSetStream(it->second, current_stream(device)));
  return it->second;
}

cudnnDataType_t cudnn_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return CUDNN_DATA_FLOAT;
    case DType::Float64:
      return CUDNN_DATA_DOUBLE;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      ::loom::detail::throw_unsupported_dtype("cuDNN", dtype);
  }
}

const void* cudnn_one(DType dtype) {
  static const float f = 1.0f;
  static const double d = 1.0;
  return dtype == DType::Float64 ? static_cast<const void*>(&d) : static_cast<const void*>(&f);
}

const void* cudnn_zero(DType dtype) {
  static const float f = 0.0f;
  static const double d = 0.0;
  return dtype == DType::Float64 ? static_cast<const void*>(&d) : static_cast<const void*>(&f);
}

namespace {
cudnnTensorFormat_t cudnn_format(bool channels_last) {
  return channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}
}  // namespace

TensorDescriptor::TensorDescriptor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w,
                                   bool channels_last) {
  LOOM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
  LOOM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
      desc_, cudnn_format(channels_last), cudnn_dtype(dtype), static_cast<int>(n),
      static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
}

TensorDescriptor::~TensorDescriptor() { cudnnDestroyTensorDescriptor(desc_); }

FilterDescriptor::FilterDescriptor(DType dtype, int64_t o, int64_t c, int64_t kh, int64_t kw,
                                   bool channels_last) {
  LOOM_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_));
  LOOM_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
      desc_, cudnn_dtype(dtype), cudnn_format(channels_last), static_cast<int>(o),
      static_cast<int>(c), static_cast<int>(kh), static_cast<int>(kw)));
}

FilterDescriptor::~FilterDescriptor() { cudnnDestroyFilterDescriptor(desc_); }

ConvolutionDescriptor::ConvolutionDescriptor(DType dtype, int64_t pad_h, int64_t pad_w,
                                             int64_t stride_h, int64_t stride_w, int64_t dil_h,
                                             int64_t dil_w) {
  LOOM_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_));
  LOOM_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      desc_, static_cast<int>(pad_h), static_cast<int>(pad_w), static_cast<int>(stride_h),
      static_cast<int>(stride_w), static_cast<int>(dil_h), static_cast<int>(dil_w),
      CUDNN_CROSS_CORRELATION, cudnn_dtype(dtype == DType::BFloat16 ? DType::Float32 : dtype)));
  LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(desc_, CUDNN_FMA_MATH));
}

ConvolutionDescriptor::~ConvolutionDescriptor() { cudnnDestroyConvolutionDescriptor(desc_); }

}  // namespace loom::cuda
