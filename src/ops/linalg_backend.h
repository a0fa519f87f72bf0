// Internal: the matrix products' backend entry points, called by linalg.cpp and implemented by
// cpu/linalg.cpp (Eigen) and cuda/linalg.cpp (cuBLAS): out[b] = a[b] @ b[b] for a batch of
// matrices whose layouts the BLAS reads directly (row-major, or column-major = a transpose).
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom::detail {

// A [batch, rows, cols] operand: element (b, i, j) sits at
//   data + b * batch_stride + (col_major ? i + j * ld : i * ld + j)
// batch_stride may be 0 (one matrix broadcast over the batch); ld >= the contiguous extent.
struct MatrixOperand {
  Tensor tensor;  // keeps the storage alive; its raw_data() is element (0, 0, 0)
  int64_t batch = 1, rows = 0, cols = 0;
  bool col_major = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// out: contiguous [batch, a.rows, b.cols] of a's dtype; a.cols == b.rows >= 1.
void cpu_gemm(const MatrixOperand& a, const MatrixOperand& b, const Tensor& out);
void cuda_gemm(const MatrixOperand& a, const MatrixOperand& b, const Tensor& out);

}  // namespace loom::detail
