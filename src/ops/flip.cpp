// flip: checks the dimensions, merges them into runs (flip_backend.h) and runs the device's
// kernel; its backward flips the gradient along the same dimensions.
#include "loom/ops/flip.h"

#include "loom/ops/dispatch.h"
#include "loom/ops/flip_backend.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

detail::FlipRuns flip_runs(const Shape& shape, const std::vector<bool>& flipped) {
  detail::FlipRuns runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // flipping it or not is the same: it joins either neighbour
    if (runs.count > 0 && runs.flipped[runs.count - 1] == flipped[d]) {
      runs.size[runs.count - 1] *= shape[d];
      continue;
    }
    LOOM_ASSERT(runs.count < detail::FlipRuns::kMax);
    runs.size[runs.count] = shape[d];
    runs.flipped[runs.count] = flipped[d];
    ++runs.count;
  }
  return runs;
}

}  // namespace

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  LOOM_CHECK(x.defined(), "flip: the input tensor is undefined");
  std::vector<bool> flipped(static_cast<size_t>(x.dim()), false);
  for (const int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, x.dim(), "flip");
    LOOM_CHECK(!flipped[static_cast<size_t>(d)], "flip: dimension ", d, " is named twice in ",
               shape_str(Shape(dims.begin(), dims.end())));
    flipped[static_cast<size_t>(d)] = true;
  }
  const Tensor input = x.contiguous();
  const Tensor out = empty(x.shape(), x.options());
  const detail::FlipRuns runs = flip_runs(x.shape(), flipped);
  if (x.numel() > 0) {
    if (x.is_cuda()) {
      LOOM_CUDA_DISPATCH("flip", detail::cuda_flip(input, out, runs));
    } else {
      detail::cpu_flip(input, out, runs);
    }
  }
  return record("flip", out, {x},
                [dims](const Tensor& g) { return std::vector<Tensor>{flip(g, dims)}; });
}

}  // namespace loom
