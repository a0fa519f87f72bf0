// Internal: the reductions' backend entry points, called by reduction.cpp (which moves the
// reduced dims last, into a contiguous [rows, length] input) and implemented by
// cpu/reduction.cpp and cuda/reduction.cu (combine rules: reduction_math.h).
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

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

}  // namespace loom::detail
