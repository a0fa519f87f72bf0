// flip's reference, shared by its CPU and GPU tests: each dimension reversed in turn by joining
// its one-wide slices in reverse order (narrow and cat), independent of flip's own kernels.
#pragma once

#include <vector>

#include "loom/ops/ops.h"

namespace loom::testing {

inline Tensor flip_by_slices(const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor out = x;
  for (int64_t dim : dims) {
    const int64_t d = dim < 0 ? dim + x.dim() : dim;
    if (out.size(d) == 0) continue;
    std::vector<Tensor> slices;
    for (int64_t i = out.size(d) - 1; i >= 0; --i) slices.push_back(out.narrow(d, i, 1));
    out = cat(slices, d);
  }
  return out.contiguous();
}

struct FlipCase {
  Shape shape;
  std::vector<int64_t> dims;
};

// Every way the dimensions merge into runs: one flipped dimension at either end or inside,
// neighbours flipped together, alternations, size-1 dimensions between, negative dimensions.
inline std::vector<FlipCase> flip_cases() {
  return {{{7}, {0}},
          {{3, 5}, {1}},
          {{3, 5}, {0}},
          {{3, 5}, {0, 1}},
          {{4, 3, 6, 5}, {3}},
          {{4, 3, 6, 5}, {-2}},
          {{4, 3, 6, 5}, {1, 2}},
          {{4, 3, 6, 5}, {0, 2}},
          {{4, 3, 6, 5}, {3, 1}},
          {{2, 1, 3, 1, 4}, {1, 2, 4}},
          {{2, 3, 4, 5, 6, 2}, {0, 2, 4}},
          {{3, 4}, {}}};
}

}  // namespace loom::testing
