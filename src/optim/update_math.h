// The per-element update rules of SGD and Adam/AdamW, written once for the CPU loops and the
// fused CUDA kernels alike, so both backends apply literally the same arithmetic.
#pragma once

#include <cmath>

#include "loom/tensor/strided_index.h"  // LOOM_HOST_DEVICE

namespace loom::optim::detail {

// Adam's coefficients for one step t, folded on the host so a kernel does no pow():
//   bc1 = 1 - beta1^t, bc2 = 1 - beta2^t, step_size = lr / bc1, inv_sqrt_bc2 = 1 / sqrt(bc2),
//   eps_term = eps (PyTorch) or eps / sqrt(bc2) (Keras), decay_factor = 1 - lr * weight_decay.
template <typename T>
struct AdamCoeffs {
  T beta1, beta2, one_minus_beta1, one_minus_beta2;
  T weight_decay, decay_factor;
  T step_size, inv_sqrt_bc2, eps_term;
  bool decoupled;  // AdamW: shrink p by decay_factor; Adam: add weight_decay * p to the gradient
};

// m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  p -= step_size * m / (sqrt(v) / sqrt(bc2) +
// eps_term)
template <typename T>
LOOM_HOST_DEVICE void adam_element(T& p, T g, T& m, T& v, const AdamCoeffs<T>& c) {
  if (c.decoupled) {
    p *= c.decay_factor;
  } else {
    g += c.weight_decay * p;
  }
  m = c.beta1 * m + c.one_minus_beta1 * g;
  v = c.beta2 * v + c.one_minus_beta2 * g * g;
  p -= c.step_size * m / (std::sqrt(v) * c.inv_sqrt_bc2 + c.eps_term);
}

template <typename T>
struct SgdCoeffs {
  T lr, weight_decay, momentum, one_minus_dampening;
  bool use_momentum, nesterov;
  bool first_step;  // the momentum buffer starts as the first gradient itself (PyTorch)
};

// g += wd p;  b = g (first step) or mu b + (1 - dampening) g;  g = g + mu b (Nesterov) or b;
// p -= lr g.  `buf` is unused without momentum.
template <typename T>
LOOM_HOST_DEVICE void sgd_element(T& p, T g, T* buf, const SgdCoeffs<T>& c) {
  g += c.weight_decay * p;
  if (c.use_momentum) {
    const T b = c.first_step ? g : c.momentum * *buf + c.one_minus_dampening * g;
    *buf = b;
    g = c.nesterov ? g + c.momentum * b : b;
  }
  p -= c.lr * g;
}

// The coefficients in T of a step configured in double (AdamConfig, SgdConfig of
// fused_update.h), for both backends and for a captured graph's kernels, which convert the
// configuration the host refreshed before the replay (so a replayed step is bit for bit the
// eager one).
template <typename T, typename Config>
LOOM_HOST_DEVICE AdamCoeffs<T> adam_coeffs(const Config& c) {
  return {T(c.beta1),        T(c.beta2),     T(1.0 - c.beta1),  T(1.0 - c.beta2), T(c.weight_decay),
          T(c.decay_factor), T(c.step_size), T(c.inv_sqrt_bc2), T(c.eps_term),    c.decoupled};
}

template <typename T, typename Config>
LOOM_HOST_DEVICE SgdCoeffs<T> sgd_coeffs(const Config& c) {
  return {T(c.lr),           T(c.weight_decay), T(c.momentum), T(1.0 - c.dampening),
          c.momentum != 0.0, c.nesterov,        c.first_step};
}

}  // namespace loom::optim::detail
