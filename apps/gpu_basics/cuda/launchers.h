// The CUDA side of loom-gpu-basics: kernel launchers on raw device pointers, enqueued on the
// given stream. Defined only in CUDA builds; callers reach them through LOOM_CUDA_DISPATCH.
#pragma once

#include <loom/loom.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "device_info.h"
#include "mandelbrot_point.h"
#include "matmul.h"
#include "timing.h"

namespace loom::gpu_basics::cuda_impl {

using Stream = loom::cuda::StreamHandle;

void vector_add(const float* a, const float* b, float* c, int64_t n, Stream stream);
void saxpy(float alpha, const float* x, float* y, int64_t n, Stream stream);
// One device-to-device cudaMemcpyAsync of nbytes.
void copy_device(void* dst, const void* src, size_t nbytes, Stream stream);

void mandelbrot(const MandelbrotSpec& spec, int32_t* counts, Stream stream);

// Row-major C[m, n] = A[m, k] B[k, n] with the chosen kernel.
void matmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
            MatmulKernel kernel, int device, Stream stream);
void matmul_cublas(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                   bool tf32, int device, Stream stream);

Timing time_with_events(int device, const std::function<void()>& work,
                        const TimingOptions& options);

// Fills info's CUDA, cuDNN and NCCL versions, its GPUs and their peer access.
void query_gpus(SystemInfo& info);

// Total memory of the device in bytes (cudaMemGetInfo).
int64_t total_memory(int device);

}  // namespace loom::gpu_basics::cuda_impl
