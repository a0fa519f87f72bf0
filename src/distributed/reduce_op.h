// The reductions a collective applies across ranks, and the element maths of each, written
// once for the CPU loops and the CUDA kernels of the backends that reduce themselves.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define LOOM_DIST_HD __host__ __device__
#else
#define LOOM_DIST_HD
#endif

namespace loom::dist {

// Avg is Sum divided by the world size (floating dtypes only: an integer mean would round).
enum class ReduceOp : uint8_t { Sum, Avg, Max, Min };

const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max", "min"

// a (+) b for Sum/Avg (the division comes once, after all ranks are summed), Max and Min.
template <typename T>
LOOM_DIST_HD inline T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Max:
      return a < b ? b : a;
    case ReduceOp::Min:
      return b < a ? b : a;
    default:
      return static_cast<T>(a + b);
  }
}

}  // namespace loom::dist
