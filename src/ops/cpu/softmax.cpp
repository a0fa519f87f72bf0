// CPU softmax / log_softmax over contiguous rows, stable: the row maximum is subtracted before
// exponentiating, and the sum of exponentials accumulates in double.
#include <cmath>
#include <limits>

#include "loom/ops/softmax_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

void cpu_softmax_rows(const Tensor& in, const Tensor& out, int64_t rows, int64_t length, bool log) {
  LOOM_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax", [&] {
    const scalar_t* x = in.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    const int64_t grain = rows * length > kParallelGrain ? 0 : std::numeric_limits<int64_t>::max();
    parallel_for(
        rows,
        [&](int64_t row) {
          const scalar_t* xr = x + row * length;
          scalar_t* yr = y + row * length;
          scalar_t m = -std::numeric_limits<scalar_t>::infinity();
          for (int64_t j = 0; j < length; ++j) m = (std::isnan(m) || m > xr[j]) ? m : xr[j];
          double total = 0.0;
          for (int64_t j = 0; j < length; ++j) total += std::exp(xr[j] - m);
          if (log) {
            const scalar_t shift = m + static_cast<scalar_t>(std::log(total));
            for (int64_t j = 0; j < length; ++j) yr[j] = xr[j] - shift;
          } else {
            const double inv = 1.0 / total;
            for (int64_t j = 0; j < length; ++j)
              yr[j] = static_cast<scalar_t>(std::exp(xr[j] - m) * inv);
          }
        },
        grain);
  });
}

}  // namespace loom::detail
