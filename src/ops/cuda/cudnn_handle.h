// cuDNN as loom's ops use it: one handle per (thread, device) bound to the current stream, the
// LOOM_CUDNN_CHECK wrapper, and RAII descriptors. Include only from CUDA-enabled sources.
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "loom/tensor/cuda/check.h"
#include "loom/tensor/dtype.h"

#define LOOM_CUDNN_CHECK(call) \
  LOOM_LIBRARY_CHECK("cuDNN", call, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)

namespace loom::cuda {

// This thread's handle for `device`, set to cuda::current_stream(device) on every call, so
// the work it launches goes where the rest of loom's work on that device goes.
cudnnHandle_t cudnn_handle(int device);

cudnnDataType_t cudnn_dtype(DType dtype);

// Pointers to the scaling factors 1 and 0 in the type cuDNN expects for `dtype` (double for
// double data, float otherwise, bfloat16 included).
const void* cudnn_one(DType dtype);
const void* cudnn_zero(DType dtype);

// A fully packed [n, c, h, w] tensor descriptor, stored NCHW or, channels_last, NHWC.
class TensorDescriptor {
 public:
  TensorDescriptor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w,
                   bool channels_last = false);
  ~TensorDescriptor();
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// [o, c, kh, kw] filters, stored so or, channels_last, [o, kh, kw, c].
class FilterDescriptor {
 public:
  FilterDescriptor(DType dtype, int64_t o, int64_t c, int64_t kh, int64_t kw,
                   bool channels_last = false);
  ~FilterDescriptor();
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

// Cross-correlation with symmetric padding, created with FMA math only (no TF32), so float
// results match the CPU to ~1e-6 relative; conv.cu switches the math type when TF32 is allowed
// and for bfloat16. Bfloat16 data accumulates in float32 (the descriptor's compute type).
class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor(DType dtype, int64_t pad_h, int64_t pad_w, int64_t stride_h,
                        int64_t stride_w, int64_t dil_h, int64_t dil_w);
  ~ConvolutionDescriptor();
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

}  // namespace loom::cuda
