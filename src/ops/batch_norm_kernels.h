// Internal: batch norm's per-channel and per-element rules shared by the CPU loops and the
// CUDA kernels, and the backend entry points. x is viewed as [n, c, inner]; per-channel
// tensors (mean, invstd, weight, bias, running stats) have x's dtype; sums run in double.
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor/strided_index.h"
#include "tensor/tensor.h"

namespace loom::detail {

struct BnGeometry {
  int64_t n = 0, c = 0, inner = 0;
  LOOM_HOST_DEVICE double count() const { return static_cast<double>(n * inner); }
  LOOM_HOST_DEVICE int64_t channel_of(int64_t i) const { return (i / inner) % c; }
};

// Per-channel pointers of one call; weight/bias/running stats may be null.
template <typename T>
struct BnChannels {
  T* mean = nullptr;
  T* invstd = nullptr;
  const T* weight = nullptr;
  const T* bias = nullptr;
  T* running_mean = nullptr;
  T* running_var = nullptr;
};

// Training statistics of one channel from sum(x) and sum(x^2) (accumulated in double), and the
// running averages' update.
template <typename T>
LOOM_HOST_DEVICE void bn_finish_stats(const BnChannels<T>& ch, int64_t c, double sum, double sumsq,
                                      double count, double momentum, double eps) {
  const double mean = sum / count;
  double var = sumsq / count - mean * mean;
  if (var < 0) var = 0;
  ch.mean[c] = static_cast<T>(mean);
  ch.invstd[c] = static_cast<T>(1.0 / sqrt(var + eps));
  if (ch.running_mean) {
    ch.running_mean[c] = static_cast<T>((1 - momentum) * ch.running_mean[c] + momentum * mean);
  }
  if (ch.running_var) {
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    ch.running_var[c] = static_cast<T>((1 - momentum) * ch.running_var[c] + momentum * unbiased);
  }
}

template <typename T>
LOOM_HOST_DEVICE T bn_apply_at(const BnChannels<T>& ch, int64_t c, T x) {
  const double w = ch.weight ? static_cast<double>(ch.weight[c]) : 1.0;
  const double b = ch.bias ? static_cast<double>(ch.bias[c]) : 0.0;
  return static_cast<T>((static_cast<double>(x) - ch.mean[c]) * ch.invstd[c] * w + b);
}

// dx from dy, given per channel sum_dy = sum(dy) and sum_dy_xmu = sum(dy * (x - mean)).
// Training: dx = w * invstd * (dy - sum_dy / m - xhat * invstd * sum_dy_xmu / m);
// eval (statistics are constants): dx = w * invstd * dy.
template <typename T>
LOOM_HOST_DEVICE T bn_grad_input_at(const BnChannels<T>& ch, int64_t c, T x, T dy, double sum_dy,
                                    double sum_dy_xmu, double count, bool training) {
  const double w = ch.weight ? static_cast<double>(ch.weight[c]) : 1.0;
  const double invstd = ch.invstd[c];
  double g = dy;
  if (training) {
    const double xhat = (static_cast<double>(x) - ch.mean[c]) * invstd;
    g -= sum_dy / count + xhat * invstd * sum_dy_xmu / count;
  }
  return static_cast<T>(w * invstd * g);
}

// Fills mean/invstd (and updates the running stats) from the batch.
void cpu_batch_norm_stats(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                          const Tensor& invstd, const Tensor& running_mean,
                          const Tensor& running_var, double momentum, double eps);
// mean = running_mean, invstd = 1 / sqrt(running_var + eps).
void cpu_batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                               const Tensor& mean, const Tensor& invstd);
void cpu_batch_norm_apply(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                          const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                          const Tensor& out);
// Fills whichever of grad_input, grad_weight, grad_bias is defined.
void cpu_batch_norm_backward(const Tensor& dy, const Tensor& x, const BnGeometry& g,
                             const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             bool training, const Tensor& grad_input, const Tensor& grad_weight,
                             const Tensor& grad_bias);

void cuda_batch_norm_stats(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                           const Tensor& invstd, const Tensor& running_mean,
                           const Tensor& running_var, double momentum, double eps);
void cuda_batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                                const Tensor& mean, const Tensor& invstd);
void cuda_batch_norm_apply(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                           const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                           const Tensor& out);
void cuda_batch_norm_backward(const Tensor& dy, const Tensor& x, const BnGeometry& g,
                              const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                              bool training, const Tensor& grad_input, const Tensor& grad_weight,
                              const Tensor& grad_bias);

}  // namespace loom::detail
