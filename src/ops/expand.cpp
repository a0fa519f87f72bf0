// Tensor::expand: a stride-0 view that repeats size-1 dims (and adds leading dims) without
// copying. It lives in ops/ because its backward, sum_to, is a reduction.
#include "loom/ops/reduction.h"
#include "loom/tensor/autograd.h"

namespace loom {

Tensor Tensor::expand(const Shape& requested) const {
  check_defined("expand");
  const int64_t n = static_cast<int64_t>(requested.size());
  const int64_t lead = n - dim();
  LOOM_CHECK(lead >= 0, "expand: the requested shape ", shape_str(requested),
             " has fewer "
             "dimensions than the tensor of shape ",
             shape_str(shape()));
  Shape new_shape(requested.size()), new_strides(requested.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t want = requested[i];
    if (i < lead) {
      LOOM_CHECK(want >= 0, "expand: size ", want, " at new leading dimension ", i, " of ",
                 shape_str(requested), " must be given (-1 only keeps an existing size)");
      new_shape[i] = want;
      new_strides[i] = 0;
      continue;
    }
    const int64_t have = shape()[i - lead];
    if (want == -1 || want == have) {
      new_shape[i] = have;
      new_strides[i] = strides()[i - lead];
    } else {
      LOOM_CHECK(have == 1 && want >= 0, "expand: cannot expand shape ", shape_str(shape()), " to ",
                 shape_str(requested), ": dimension ", i - lead, " has size ", have,
                 " and only size-1 dimensions can be expanded (to ", want, ")");
      new_shape[i] = want;
      new_strides[i] = 0;
    }
  }
  const Tensor out = as_strided(new_shape, new_strides, offset());
  const Shape input_shape = shape();
  return record("expand", out, {*this}, [input_shape](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, input_shape)};
  });
}

}  // namespace loom
