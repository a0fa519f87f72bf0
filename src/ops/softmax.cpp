// softmax and log_softmax along any dim: the dim is moved last so the row kernels of
// softmax_backend.h see contiguous rows. Backward by composition from the saved output y:
//   softmax:     dx = y * (g - sum(g * y))      log_softmax: dx = g - exp(y) * sum(g)
// with the sums along dim (keepdim).
#include "loom/ops/softmax.h"

#include "loom/ops/dispatch.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/reduction.h"
#include "loom/ops/softmax_backend.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

Tensor softmax_forward(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  LOOM_CHECK(x.defined(), op, ": the input tensor is undefined");
  LOOM_CHECK(is_floating(x.dtype()), op, ": needs a floating-point tensor, got ",
             dtype_name(x.dtype()));
  if (x.dim() == 0) {  // one element along dim 0 (or -1)
    wrap_dim(dim, 1, op);
    return softmax_forward(x.reshape({1}), 0, log).reshape({});
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  const int64_t last = x.dim() - 1;
  const Tensor rows_in = x.detach().transpose(d, last).contiguous();
  const Tensor rows_out = empty(rows_in.shape(), rows_in.options());
  const int64_t length = x.size(d);
  const int64_t rows = length == 0 ? 0 : x.numel() / length;
  if (rows > 0) {
    if (x.is_cuda()) {
      LOOM_CUDA_DISPATCH(op, detail::cuda_softmax_rows(rows_in, rows_out, rows, length, log));
    } else {
      detail::cpu_softmax_rows(rows_in, rows_out, rows, length, log);
    }
  }
  const Tensor y = rows_out.transpose(d, last).contiguous();
  const Tensor saved = y.detach();
  return record(op, y, {x}, [saved, d, log](const Tensor& g) {
    if (log) return std::vector<Tensor>{g - exp(saved) * sum(g, {d}, true)};
    return std::vector<Tensor>{saved * (g - sum(g * saved, {d}, true))};
  });
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_forward(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_forward(x, dim, true); }

}  // namespace loom
