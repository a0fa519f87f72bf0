// Losses as compositions of ops; shapes, dtypes and devices are checked here so the messages
// name the loss rather than an inner op.
#include "loom/nn/loss.h"

#include "loom/ops/activation.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/one_hot.h"
#include "loom/ops/reduction.h"
#include "loom/ops/softmax.h"

namespace loom::nn {

namespace {

// Bfloat16 predictions (mixed precision's outputs) widened to float32: a loss and its mean over
// a batch in bfloat16 would keep 8 significant bits; the gradient flows back as bfloat16.
Tensor widened(const Tensor& t) {
  return t.defined() && t.dtype() == kBFloat16 ? t.to(kFloat32) : t;
}

Tensor reduce(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::Mean:
      return mean(losses);
    case Reduction::Sum:
      return sum(losses);
    case Reduction::None:
      return losses;
  }
  LOOM_ASSERT(false, "unknown Reduction");
  return losses;
}

// Targets of the prediction's shape and device, converted to its floating dtype.
Tensor matching_targets(const char* loss, const Tensor& input, const Tensor& targets) {
  LOOM_CHECK(input.defined() && targets.defined(), loss, ": input and targets must be defined");
  LOOM_CHECK(is_floating(input.dtype()), loss, ": input must be floating-point, got ",
             dtype_name(input.dtype()));
  LOOM_CHECK(input.shape() == targets.shape(), loss, ": input ", shape_str(input.shape()),
             " and targets ", shape_str(targets.shape()),
             " must have the same shape (reshape the targets, e.g. to [N, 1])");
  LOOM_CHECK(input.device() == targets.device(), loss, ": input on ", input.device().str(),
             " but targets on ", targets.device().str());
  return targets.dtype() == input.dtype() ? targets : targets.to(input.dtype());
}

// Checks log_probs/logits [N, C] against class indices [N].
void check_class_targets(const char* loss, const Tensor& input, const Tensor& targets) {
  LOOM_CHECK(input.defined() && targets.defined(), loss, ": input and targets must be defined");
  LOOM_CHECK(input.dim() == 2, loss, ": expected input [N, C], got ", shape_str(input.shape()));
  LOOM_CHECK(is_floating(input.dtype()), loss, ": input must be floating-point, got ",
             dtype_name(input.dtype()));
  LOOM_CHECK(targets.dtype() == kInt64 || targets.dtype() == kInt32, loss,
             ": targets must be class indices (int64 or int32), got ", dtype_name(targets.dtype()));
  LOOM_CHECK(targets.dim() == 1 && targets.size(0) == input.size(0), loss, ": targets ",
             shape_str(targets.shape()), " must be [N] for input ", shape_str(input.shape()));
  LOOM_CHECK(input.device() == targets.device(), loss, ": input on ", input.device().str(),
             " but targets on ", targets.device().str());
}

// -log_probs[i, targets_i] for each row: [N].
Tensor picked_negative(const Tensor& log_probs, const Tensor& targets) {
  const Tensor mask = one_hot(targets, log_probs.size(1), log_probs.dtype());
  return neg(sum(log_probs * mask, {1}));
}

}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& logits_in, const Tensor& targets,
                                        Reduction reduction) {
  const Tensor logits = widened(logits_in);
  const Tensor y = matching_targets("binary_cross_entropy_with_logits", logits, targets);
  return reduce(bce_with_logits_terms(logits, y), reduction);
}

Tensor binary_cross_entropy(const Tensor& probs_in, const Tensor& targets, Reduction reduction,
                            double eps) {
  const Tensor probs = widened(probs_in);
  const Tensor y = matching_targets("binary_cross_entropy", probs, targets);
  LOOM_CHECK(eps >= 0 && eps < 0.5, "binary_cross_entropy: eps must be in [0, 0.5), got ", eps);
  const Tensor p = clamp(probs, eps, 1.0 - eps);
  const Tensor losses = neg(y * log(p) + (1.0 - y) * log(1.0 - p));
  return reduce(losses, reduction);
}

Tensor nll_loss(const Tensor& log_probs_in, const Tensor& targets, Reduction reduction) {
  const Tensor log_probs = widened(log_probs_in);
  check_class_targets("nll_loss", log_probs, targets);
  return reduce(picked_negative(log_probs, targets), reduction);
}

Tensor cross_entropy(const Tensor& logits_in, const Tensor& targets, Reduction reduction,
                     double label_smoothing) {
  const Tensor logits = widened(logits_in);
  check_class_targets("cross_entropy", logits, targets);
  LOOM_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
             "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  const Tensor log_probs = log_softmax(logits, 1);
  Tensor losses = picked_negative(log_probs, targets);
  if (label_smoothing > 0) {
    const Tensor uniform_part = neg(mean(log_probs, {1}));
    losses = losses * (1.0 - label_smoothing) + uniform_part * label_smoothing;
  }
  return reduce(losses, reduction);
}

Tensor mse_loss(const Tensor& input_in, const Tensor& target, Reduction reduction) {
  const Tensor input = widened(input_in);
  const Tensor y = matching_targets("mse_loss", input, target);
  const Tensor diff = input - y;
  return reduce(diff * diff, reduction);
}

}  // namespace loom::nn
