// The storage-level kernels the tensor core itself needs (no autograd): fill, strided copy with
// dtype conversion, in-place accumulation for gradients, random fills. One dispatch on the
// destination's device here; CPU loops in cpu_primitives.cpp, CUDA in cuda/primitives.cu.
#pragma once

#include <cstdint>

#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

enum class RandomKind { Uniform, Normal, Integer };

struct RandomParams {
  RandomKind kind = RandomKind::Uniform;
  double low = 0.0, high = 1.0;  // Uniform: [low, high); Integer: [low, high)
  uint64_t seed = 0, offset = 0;
};

void fill(const Tensor& dst, double value);
// dst and src on the same device; src broadcasts to dst's shape; dtypes may differ.
void copy_same_device(const Tensor& dst, const Tensor& src);
// dst += src: same shape, dtype and device (the engine's gradient accumulation).
void accumulate(const Tensor& dst, const Tensor& src);
// Fills a contiguous dst; element i uses counter offset + i.
void fill_random(const Tensor& dst, const RandomParams& params);

void cpu_fill(const Tensor& dst, double value);
void cpu_copy(const Tensor& dst, const Tensor& src);
void cpu_accumulate(const Tensor& dst, const Tensor& src);
void cpu_fill_random(const Tensor& dst, const RandomParams& params);

void cuda_fill(const Tensor& dst, double value);
void cuda_copy(const Tensor& dst, const Tensor& src);
void cuda_accumulate(const Tensor& dst, const Tensor& src);
void cuda_fill_random(const Tensor& dst, const RandomParams& params);
// Contiguous bytes between host and device, or device and device, on the current stream;
// synchronous when either side is pageable host memory.
void cuda_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);
// Contiguous bytes from one CUDA device to another (or the same one) on `stream`, with no wait
// of any kind: ordering against other streams, and keeping the source alive until the copy has
// read it, are the caller's (dist::PipelineParallel orders its stages' streams by events).
void cuda_memcpy_on_stream(void* dst, Device dst_device, const void* src, Device src_device,
                           size_t nbytes, cuda::StreamHandle stream);

[[noreturn]] void throw_no_cuda(const char* op);

}  // namespace loom::detail
