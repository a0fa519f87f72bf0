// dropout's mask application on the CPU.
#include <type_traits>

#include "loom/ops/dropout_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

void cpu_dropout_apply(const Tensor& src, const Tensor& u, double p, const Tensor& out) {
  const double scale = 1.0 / (1.0 - p);
  LOOM_DISPATCH_FLOATING_AND_BF16(src.dtype(), "dropout", [&] {
    const scalar_t* s = src.data_ptr<scalar_t>();
    using U = std::conditional_t<std::is_same_v<scalar_t, BFloat16>, float, scalar_t>;
    const U* r = u.data_ptr<U>();
    scalar_t* o = out.data_ptr<scalar_t>();
    parallel_for(src.numel(), [&](int64_t i) { o[i] = dropout_at(s[i], r[i], p, scale); });
  });
}

}  // namespace loom::detail
