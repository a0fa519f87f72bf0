// fit's stock losses and the correct-prediction count its accuracy comes from.
#include "loom/nn/loss.h"
#include "loom/nn/models/predict.h"
#include "loom/ops/ops.h"
#include "loom/train/fit.h"

namespace loom::train {

LossFn binary_cross_entropy_loss() {
  return [](const Tensor& outputs, const Tensor& labels) {
    LOOM_CHECK(outputs.dim() == 2 && outputs.size(1) == 1,
               "binary_cross_entropy_loss: expected "
               "outputs [B, 1] of logits, got ",
               shape_str(outputs.shape()));
    return nn::binary_cross_entropy_with_logits(outputs,
                                                labels.to(kFloat32).reshape({labels.numel(), 1}));
  };
}

LossFn cross_entropy_loss() {
  return [](const Tensor& outputs, const Tensor& labels) {
    return nn::cross_entropy(outputs, labels);
  };
}

Tensor count_correct(const Tensor& outputs, const Tensor& labels) {
  LOOM_CHECK(outputs.dim() == 2 && outputs.size(0) == labels.numel(), "count_correct: outputs ",
             shape_str(outputs.shape()), " do not match labels ", shape_str(labels.shape()));
  return sum(eq(predicted_classes(outputs), labels.reshape({labels.numel()})).to(kFloat32));
}

}  // namespace loom::train
