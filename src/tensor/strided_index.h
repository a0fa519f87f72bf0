// Host-and-device helpers for kernels over strided tensors: map an output's linear index to an
// input's storage offset, with broadcasting expressed as stride 0. Used by the CPU loops and
// the CUDA kernels alike, so both index tensors the same way.
#pragma once

#include <cstdint>

#include "loom/tensor/host_device.h"
#include "loom/tensor/shape.h"

namespace loom {

class Tensor;

constexpr int kMaxDims = 8;

struct StridedIndexer {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t offset = 0;

  // Storage offset (in elements) of the element at row-major position `linear`.
  LOOM_HOST_DEVICE int64_t operator()(int64_t linear) const {
    int64_t result = offset;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      result += i * strides[d];
    }
    return result;
  }
};

// An indexer that reads `t` as if broadcast to `shape` (NumPy rules; broadcast dims get
// stride 0). Throws when t's shape does not broadcast to `shape` or has over kMaxDims dims.
StridedIndexer make_indexer(const Tensor& t, const Shape& shape, const char* op);
// The strides `t` would have when broadcast to `shape`.
Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op);

}  // namespace loom
