// Matrix multiply four ways, the seed readers' second exercise: a naive kernel (one output per
// thread, operands from global memory), a tiled kernel (blocks of A and B staged in shared
// memory, each thread accumulating an 8x8 patch in registers), and the vendor library
// (cuBLAS in fp32 or TF32 on a GPU, Eigen on the CPU). On the CPU, naive and tiled are the
// same two ideas as loops: a dot product per output, and cache-sized blocks.
#pragma once

#include <loom/loom.h>

namespace loom::gpu_basics {

enum class MatmulKernel { kNaive, kTiled, kLibrary, kLibraryTf32 };

// "naive", "tiled", "cublas-fp32" / "eigen", "cublas-tf32".
const char* matmul_kernel_name(MatmulKernel kernel, Device device);

// Row-major C[m, n] = A[m, k] B[k, n]: float32, contiguous, all on one device. kLibraryTf32
// exists only on a GPU. Throws loom::Error naming the shapes when they do not fit together.
void matmul_into(const Tensor& a, const Tensor& b, const Tensor& c, MatmulKernel kernel);
Tensor matmul(const Tensor& a, const Tensor& b, MatmulKernel kernel);

// 2 m n k: the multiply-adds of one product, counted as two operations each.
inline double matmul_flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

}  // namespace loom::gpu_basics
