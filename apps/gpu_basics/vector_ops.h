// The memory-bound first exercises: C = A + B and SAXPY (y = a*x + y) on float32 vectors, and
// the plain copy whose bandwidth is their ceiling. Each runs where its tensors live: a CUDA
// kernel on the device's current stream, or a multithreaded loop on the CPU.
#pragma once

#include <loom/loom.h>

namespace loom::gpu_basics {

// c[i] = a[i] + b[i]; a, b, c: contiguous float32 vectors of one length on one device.
void vector_add(const Tensor& a, const Tensor& b, const Tensor& c);
// y[i] = alpha * x[i] + y[i], in place.
void saxpy(float alpha, const Tensor& x, const Tensor& y);
// dst = src byte for byte (cudaMemcpyAsync device-to-device on a GPU, memcpy on the CPU).
void copy_vector(const Tensor& src, const Tensor& dst);

// Bytes each operation moves through memory per element: what its bandwidth is counted with.
constexpr double kVectorAddBytesPerElement = 12;  // read a, read b, write c
constexpr double kSaxpyBytesPerElement = 12;      // read x, read y, write y
constexpr double kCopyBytesPerElement = 8;        // read src, write dst

// GB/s (1e9 bytes per second) of moving `bytes` in `ms` milliseconds.
inline double gigabytes_per_second(double bytes, double ms) { return bytes / (ms * 1e6); }

}  // namespace loom::gpu_basics
