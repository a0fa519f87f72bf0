// Internal: dropout's per-element rule, compiled into both the CPU loop and the CUDA kernel.
// u holds the uniform draws in [0, 1) that decide the mask.
#pragma once

#include "loom/tensor/host_device.h"

namespace loom::detail {

// An element is kept when its draw is at least p; kept elements are scaled by 1 / (1 - p).
// U is T, or float for bfloat16 values (draws in float32, as for float32 values).
template <typename T, typename U>
LOOM_HOST_DEVICE T dropout_at(T value, U u, double p, double scale) {
  return static_cast<double>(u) >= p ? static_cast<T>(value * scale) : T(0);
}

}  // namespace loom::detail
