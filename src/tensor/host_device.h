// LOOM_HOST_DEVICE marks a function that the CPU loops and the CUDA kernels both call: compiled
// for host and device (and force-inlined) under nvcc, a plain inline function elsewhere.
#pragma once

#if defined(__CUDACC__)
#define LOOM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define LOOM_HOST_DEVICE inline
#endif
