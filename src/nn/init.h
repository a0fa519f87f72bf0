// Weight initialisers, seeded through loom's Generator. Two schemes for the learnable layers:
//   Init::PyTorch  kaiming_uniform(a = sqrt(5)) weights, bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))
//                  (PyTorch's nn.Linear / nn.Conv2d defaults; the default of loom's layers);
//   Init::Keras    glorot_uniform weights, zero bias (Keras' Dense / Conv2D defaults; the zoo's
//                  seed models use it because the seed is Keras code).
#pragma once

#include <cstdint>

#include "loom/tensor/random.h"
#include "loom/tensor/tensor.h"

namespace loom::nn {

enum class Init { PyTorch, Keras };

// fan_in = shape[1] * receptive field, fan_out = shape[0] * receptive field, for a weight laid
// out [out, in, kh, kw] (conv) or [out, in] (linear). Needs at least 2 dims.
struct Fans {
  int64_t fan_in;
  int64_t fan_out;
};
Fans compute_fans(const Shape& weight_shape);

// All fill `t` in place, outside autograd; gen = nullptr uses the default generator.
void uniform_(const Tensor& t, double low, double high, Generator* gen = nullptr);
void zeros_(const Tensor& t);
// U(-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)): variance 2 / (fan_in + fan_out).
void glorot_uniform_(const Tensor& weight, Generator* gen = nullptr);
// U(-bound, bound) with bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)).
// With a = sqrt(5) (PyTorch's layer default) the bound is 1 / sqrt(fan_in).
void kaiming_uniform_(const Tensor& weight, double a, Generator* gen = nullptr);

// The weight and bias (undefined when the layer has none) of a Linear or Conv2d in `scheme`.
void init_weight_and_bias(Init scheme, const Tensor& weight, const Tensor& bias,
                          Generator* gen = nullptr);

}  // namespace loom::nn
