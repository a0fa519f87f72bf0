// Global-norm gradient clipping: per-(device, dtype) fused sums of squares, one read each.
#include "loom/optim/clip_grad.h"

#include <cmath>

#include "loom/optim/fused_update.h"
#include "loom/tensor/autograd.h"

namespace loom::optim {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  LOOM_CHECK(max_norm >= 0.0, "clip_grad_norm_: max_norm must be non-negative, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<std::vector<Tensor>> buckets;  // grads of one device and dtype
  for (const Tensor& param : params) {
    LOOM_CHECK(param.defined(), "clip_grad_norm_: got an undefined parameter");
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    if (!grad.is_contiguous()) {
      // Scaling an expanded (stride 0) grad in place would scale shared elements repeatedly.
      grad = grad.contiguous();
      Tensor(param).set_grad(grad);
    }
    bool placed = false;
    for (auto& bucket : buckets) {
      if (bucket.front().device() == grad.device() && bucket.front().dtype() == grad.dtype()) {
        bucket.push_back(grad);
        placed = true;
        break;
      }
    }
    if (!placed) buckets.push_back({grad});
  }
  std::vector<Tensor> sums;
  for (const auto& bucket : buckets) sums.push_back(detail::sum_of_squares(bucket));
  double total_sq = 0.0;
  for (const Tensor& sum : sums) total_sq += sum.item<double>();
  const double total = std::sqrt(total_sq);
  const double coef = max_norm / (total + 1e-6);
  if (!(coef >= 1.0)) {  // also rescales when total is NaN, so the NaN reaches the grads
    for (const auto& bucket : buckets) detail::scale(bucket, coef);
  }
  return total;
}

}  // namespace loom::optim
