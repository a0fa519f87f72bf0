// The device kernels behind reductions and softmax. Both work on a contiguous [rows, R] input
// along R; reduction.cpp and softmax.cpp move the dims into that layout and record autograd.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace loom::detail {

enum class ReduceKind { Sum, Max, Min };

// What to reduce and where the results go. Sum: values[row] = scale * sum of the row (values
// has the input's dtype when floating, bfloat16 included, int64 for integer input). Max/Min:
// values (same dtype as the input) and indices (int64, position within the row of the first
// extreme); either may be undefined.
struct RowReduction {
  ReduceKind kind = ReduceKind::Sum;
  double scale = 1.0;
  Tensor values;
  Tensor indices;
};

void cpu_reduce_rows(const Tensor& in, int64_t rows, int64_t length, const RowReduction& r);
void cuda_reduce_rows(const Tensor& in, int64_t rows, int64_t length, const RowReduction& r);

// out = softmax (or log_softmax when `log`) of each row; in and out contiguous, same dtype.
void cpu_softmax_rows(const Tensor& in, const Tensor& out, int64_t rows, int64_t length, bool log);
void cuda_softmax_rows(const Tensor& in, const Tensor& out, int64_t rows, int64_t length, bool log);

}  // namespace loom::detail
