// CPU one_hot: every index is checked against the class count before anything is written.
#include "loom/ops/one_hot_backend.h"

namespace loom::detail {

namespace {

template <typename I>
void one_hot_loop(const I* idx, int64_t n, const Tensor& out, int64_t classes) {
  for (int64_t i = 0; i < n; ++i) {
    LOOM_CHECK(idx[i] >= 0 && idx[i] < classes, "one_hot: index ", static_cast<int64_t>(idx[i]),
               " (at position ", i, ") is out of range for num_classes ", classes);
  }
  LOOM_DISPATCH_ALL_AND_BF16(out.dtype(), "one_hot", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) o[i * classes + static_cast<int64_t>(idx[i])] = scalar_t(1);
  });
}

}  // namespace

void cpu_one_hot(const Tensor& indices, const Tensor& out, int64_t classes) {
  if (indices.dtype() == kInt64) {
    one_hot_loop(indices.data_ptr<int64_t>(), indices.numel(), out, classes);
  } else {
    one_hot_loop(indices.data_ptr<int32_t>(), indices.numel(), out, classes);
  }
}

}  // namespace loom::detail
