// Internal: the combine rules of the row reductions, shared by the CPU loops and the CUDA kernels
// so both devices agree on accumulator types, NaN handling and which index wins a tie.
#pragma once

#include <cstdint>
#include <type_traits>

#include "loom/tensor/dtype.h"
#include "loom/tensor/host_device.h"

namespace loom::detail {

// Floating sums (bfloat16's too) accumulate in double so a sum of 2^26 floats keeps float
// precision; integer sums accumulate (and are returned) in int64, as PyTorch does.
template <typename T>
using sum_acc_t = std::conditional_t<is_floating_type_v<T>, double, int64_t>;

template <typename T>
struct SumOp {
  using acc_t = sum_acc_t<T>;
  LOOM_HOST_DEVICE acc_t identity() const { return acc_t(0); }
  LOOM_HOST_DEVICE acc_t make(T value, int64_t) const { return static_cast<acc_t>(value); }
  LOOM_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a + b; }
};

template <typename T>
LOOM_HOST_DEVICE bool is_nan_value(T v) {
  if constexpr (is_floating_type_v<T>) return v != v;
  return false;
}

template <typename T>
struct ValueIndex {
  T value;
  int64_t index;  // -1: no element seen yet
};

// max (kMax) or min with its first position. The order is total (NaN beats every number, as
// PyTorch propagates NaN; ties go to the lower index), so combine is associative and
// commutative and any reduction tree gives the same answer.
template <typename T, bool kMax>
struct ExtremeOp {
  using acc_t = ValueIndex<T>;
  LOOM_HOST_DEVICE acc_t identity() const { return {T(0), -1}; }
  LOOM_HOST_DEVICE acc_t make(T value, int64_t index) const { return {value, index}; }
  LOOM_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = is_nan_value(a.value), b_nan = is_nan_value(b.value);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (a_nan || a.value == b.value) return a.index <= b.index ? a : b;
    return (kMax ? a.value > b.value : a.value < b.value) ? a : b;
  }
};

// Where a finished row goes: out[row] = scale * sum (scale = 1/count gives the mean).
template <typename Acc, typename Out>
struct SumSink {
  Out* out;
  double scale;
  LOOM_HOST_DEVICE void store(int64_t row, Acc acc) const {
    if constexpr (is_floating_type_v<Out>) {
      out[row] = static_cast<Out>(static_cast<double>(acc) * scale);
    } else {
      out[row] = static_cast<Out>(acc);
    }
  }
};

// values and/or indices (either may be null) of the extreme element of each row.
template <typename T>
struct ExtremeSink {
  T* values;
  int64_t* indices;
  LOOM_HOST_DEVICE void store(int64_t row, ValueIndex<T> acc) const {
    if (values != nullptr) values[row] = acc.value;
    if (indices != nullptr) indices[row] = acc.index;
  }
};

}  // namespace loom::detail
