// The memory-bound kernels: vector add and SAXPY, four floats per thread through 16-byte loads
// (fewer memory instructions for the same bytes), a scalar tail, and the copy ceiling.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/launchers.h"

namespace loom::gpu_basics::cuda_impl {
namespace {

constexpr int kThreads = 256;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Threads needed when each handles `per_thread` elements, as a grid of kThreads blocks.
dim3 grid_for(int64_t n, int64_t per_thread) {
  const int64_t threads = (n + per_thread - 1) / per_thread;
  return dim3(static_cast<unsigned>((threads + kThreads - 1) / kThreads));
}

// c = a + b; thread t owns elements [4t, 4t + 4).
__global__ void vector_add_vec4(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ c, int64_t n) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i + 4 <= n) {
    const float4 x = *reinterpret_cast<const float4*>(a + i);
    const float4 y = *reinterpret_cast<const float4*>(b + i);
    *reinterpret_cast<float4*>(c + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  } else {
    for (int64_t j = i; j < n; ++j) c[j] = a[j] + b[j];
  }
}

// The same with one element per thread, for pointers that are not 16-byte aligned.
__global__ void vector_add_scalar(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// y = alpha * x + y; thread t owns elements [4t, 4t + 4).
__global__ void saxpy_vec4(float alpha, const float* __restrict__ x, float* __restrict__ y,
                           int64_t n) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i + 4 <= n) {
    const float4 u = *reinterpret_cast<const float4*>(x + i);
    float4 v = *reinterpret_cast<const float4*>(y + i);
    v.x = alpha * u.x + v.x;
    v.y = alpha * u.y + v.y;
    v.z = alpha * u.z + v.z;
    v.w = alpha * u.w + v.w;
    *reinterpret_cast<float4*>(y + i) = v;
  } else {
    for (int64_t j = i; j < n; ++j) y[j] = alpha * x[j] + y[j];
  }
}

__global__ void saxpy_scalar(float alpha, const float* __restrict__ x, float* __restrict__ y,
                             int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, int64_t n, Stream stream) {
  if (aligned16(a) && aligned16(b) && aligned16(c)) {
    vector_add_vec4<<<grid_for(n, 4), kThreads, 0, stream>>>(a, b, c, n);
  } else {
    vector_add_scalar<<<grid_for(n, 1), kThreads, 0, stream>>>(a, b, c, n);
  }
  GPU_BASICS_KERNEL_CHECK();
}

void saxpy(float alpha, const float* x, float* y, int64_t n, Stream stream) {
  if (aligned16(x) && aligned16(y)) {
    saxpy_vec4<<<grid_for(n, 4), kThreads, 0, stream>>>(alpha, x, y, n);
  } else {
    saxpy_scalar<<<grid_for(n, 1), kThreads, 0, stream>>>(alpha, x, y, n);
  }
  GPU_BASICS_KERNEL_CHECK();
}

void copy_device(void* dst, const void* src, size_t nbytes, Stream stream) {
  GPU_BASICS_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream));
}

}  // namespace loom::gpu_basics::cuda_impl
