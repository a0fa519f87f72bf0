// Internal: flip's backend entry points, called by flip.cpp and implemented by cpu/flip.cpp and
// cuda/flip.cu. The tensor's dimensions are merged into runs of neighbours that are all flipped
// or all kept (reversing two neighbouring dimensions reverses their merged one), so an image
// batch flipped along its width is two runs, [N*C*H] kept and [W] flipped.
#pragma once

#include <cstdint>

#include "loom/tensor/host_device.h"
#include "loom/tensor/strided_index.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

struct FlipRuns {
  static constexpr int kMax = kMaxDims;  // a run has at least one dimension
  int count = 0;
  int64_t size[kMax] = {};  // row-major, the last fastest
  bool flipped[kMax] = {};
};

// out[i] = x[source of i] for contiguous x and out of one dtype and shape.
void cpu_flip(const Tensor& x, const Tensor& out, const FlipRuns& runs);
void cuda_flip(const Tensor& x, const Tensor& out, const FlipRuns& runs);

// The element of x that lands at `out_index`: each run's coordinate, reversed where flipped.
LOOM_HOST_DEVICE int64_t flip_source(int64_t out_index, const FlipRuns& runs) {
  int64_t rest = out_index, source = 0, stride = 1;
  for (int r = runs.count - 1; r >= 0; --r) {
    const int64_t size = runs.size[r];
    const int64_t c = rest % size;
    rest /= size;
    source += (runs.flipped[r] ? size - 1 - c : c) * stride;
    stride *= size;
  }
  return source;
}

}  // namespace loom::detail
