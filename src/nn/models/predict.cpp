// predict(): eval-mode forward, then the head's probability function.
#include "loom/nn/models/predict.h"

#include "loom/ops/activation.h"
#include "loom/ops/softmax.h"
#include "loom/tensor/autograd.h"

namespace loom::nn {

Tensor predict(Module& model, const Tensor& x) {
  EvalModeGuard eval_mode(model);
  NoGradGuard no_grad;
  const Tensor logits = model.forward(x);
  LOOM_CHECK(logits.dim() == 2, "predict: expected the model to output [N, outputs], got ",
             shape_str(logits.shape()));
  return logits.size(1) == 1 ? sigmoid(logits) : softmax(logits, 1);
}

}  // namespace loom::nn
