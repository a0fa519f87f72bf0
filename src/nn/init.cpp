// Initialisers: fans from the weight layout, then one uniform fill.
#include "loom/nn/init.h"

#include <cmath>

#include "loom/tensor/autograd.h"

namespace loom::nn {

Fans compute_fans(const Shape& shape) {
  LOOM_CHECK(shape.size() >= 2, "init: fan_in/fan_out need a weight of at least 2 dims, got ",
             shape_str(shape));
  int64_t receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  NoGradGuard no_grad;
  Tensor(t).copy_(uniform(t.shape(), low, high, TensorOptions(t.dtype()).device(t.device()), gen));
}

void zeros_(const Tensor& t) {
  NoGradGuard no_grad;
  Tensor(t).zero_();
}

void glorot_uniform_(const Tensor& weight, Generator* gen) {
  const Fans fans = compute_fans(weight.shape());
  const double limit = std::sqrt(6.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  uniform_(weight, -limit, limit, gen);
}

void kaiming_uniform_(const Tensor& weight, double a, Generator* gen) {
  const Fans fans = compute_fans(weight.shape());
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fans.fan_in));
  uniform_(weight, -bound, bound, gen);
}

void init_weight_and_bias(Init scheme, const Tensor& weight, const Tensor& bias, Generator* gen) {
  if (scheme == Init::Keras) {
    glorot_uniform_(weight, gen);
    if (bias.defined()) zeros_(bias);
    return;
  }
  kaiming_uniform_(weight, std::sqrt(5.0), gen);
  if (bias.defined()) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(compute_fans(weight.shape()).fan_in));
    uniform_(bias, -bound, bound, gen);
  }
}

}  // namespace loom::nn
