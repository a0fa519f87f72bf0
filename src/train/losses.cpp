// fit's stock losses and the correct-prediction count its accuracy comes from.
#include "loom/nn/loss.h"
#include "loom/nn/models/predict.h"
#include "loom/ops/ops.h"
#include "loom/train/fit.h"

namespace loom::train {

LossFn binary_cross_entropy_loss(double label_smoothing) {
  LOOM_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0,
             "binary_cross_entropy_loss: label_smoothing must lie in [0, 1), got ",
             label_smoothing);
  return [label_smoothing](const Tensor& outputs, const Tensor& labels) {
    LOOM_CHECK(outputs.dim() == 2 && outputs.size(1) == 1,
               "binary_cross_entropy_loss: expected "
               "outputs [B, 1] of logits, got ",
               shape_str(outputs.shape()));
    Tensor targets = labels.to(kFloat32).reshape({labels.numel(), 1});
    if (label_smoothing > 0.0)  // Keras: y (1 - s) + s / 2
      targets = targets * (1.0 - label_smoothing) + label_smoothing / 2.0;
    return nn::binary_cross_entropy_with_logits(outputs, targets);
  };
}

LossFn cross_entropy_loss(double label_smoothing) {
  LOOM_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0,
             "cross_entropy_loss: label_smoothing must lie in [0, 1), got ", label_smoothing);
  return [label_smoothing](const Tensor& outputs, const Tensor& labels) {
    return nn::cross_entropy(outputs, labels, nn::Reduction::Mean, label_smoothing);
  };
}

Tensor count_correct(const Tensor& outputs, const Tensor& labels) {
  LOOM_CHECK(outputs.dim() == 2 && outputs.size(0) == labels.numel(), "count_correct: outputs ",
             shape_str(outputs.shape()), " do not match labels ", shape_str(labels.shape()));
  return sum(eq(predicted_classes(outputs), labels.reshape({labels.numel()})).to(kFloat32));
}

}  // namespace loom::train
