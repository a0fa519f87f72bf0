// Global-norm gradient clipping: per-(device, dtype) fused sums of squares, one read each.
#include "loom/optim/clip_grad.h"

#include <cmath>

#include "loom/ops/elementwise.h"
#include "loom/optim/fused_update.h"
#include "loom/tensor/autograd.h"

namespace loom::optim {

namespace {

// The parameters' grads by (device, dtype), each bucket summed by one fused pass.
std::vector<std::vector<Tensor>> grad_buckets(const std::vector<Tensor>& params, double max_norm,
                                              const char* op) {
  LOOM_CHECK(max_norm >= 0.0, op, ": max_norm must be non-negative, got ", max_norm);
  std::vector<std::vector<Tensor>> buckets;  // grads of one device and dtype
  for (const Tensor& param : params) {
    LOOM_CHECK(param.defined(), op, ": got an undefined parameter");
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    if (!grad.is_contiguous(param.suggest_memory_format())) {
      // Scaling an expanded (stride 0) grad in place would scale shared elements repeatedly.
      grad = grad.contiguous(param.suggest_memory_format());
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
  return buckets;
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  NoGradGuard no_grad;
  const auto buckets = grad_buckets(params, max_norm, "clip_grad_norm_");
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

Tensor clip_grad_norm_on_device(const std::vector<Tensor>& params, double max_norm) {
  NoGradGuard no_grad;
  const auto buckets = grad_buckets(params, max_norm, "clip_grad_norm_on_device");
  if (buckets.empty()) return zeros({}, TensorOptions(kFloat64));
  const Device home = buckets.front().front().device();
  Tensor total_sq;
  for (const auto& bucket : buckets) {
    const Tensor sum = detail::sum_of_squares(bucket).reshape({}).to(home);
    total_sq = total_sq.defined() ? total_sq + sum : sum;
  }
  const Tensor total = sqrt(total_sq);
  // min(1, max_norm / (total + 1e-6)); NaN stays NaN, so a non-finite norm reaches the grads.
  const Tensor coef = clamp(max_norm / (total + 1e-6), 0.0, 1.0);
  for (const auto& bucket : buckets) {  // one device and dtype: one factor for all its grads
    const Tensor factor = coef.to(bucket.front().device(), bucket.front().dtype());
    for (const Tensor& grad : bucket) Tensor(grad).copy_(grad * factor);
  }
  return total;
}

}  // namespace loom::optim
