// Internal: batch norm's per-channel and per-element rules, compiled into both the CPU loops
// (cpu/batch_norm.cpp) and the CUDA kernels (cuda/batch_norm.cu). x is viewed as
// [n, c, inner]; per-channel tensors (mean, invstd, weight, bias, running stats) have x's dtype,
// float32 for bfloat16 x (bn_param_t: mixed precision keeps statistics and parameters in
// float32). Sums and per-channel coefficients run in double; the per-element passes in the
// parameter type (float for bfloat16 and float32, as PyTorch's kernels), with x - mean taken
// first so that a large mean does not cancel away the precision.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "loom/tensor/bfloat16.h"
#include "loom/tensor/host_device.h"

namespace loom::detail {

struct BnGeometry {
  int64_t n = 0, c = 0, inner = 0;
  bool channels_last = false;  // stored [n, inner, c] (NHWC): the CUDA backend's choice only
  LOOM_HOST_DEVICE double count() const { return static_cast<double>(n * inner); }
  // How many consecutive elements share a channel.
  LOOM_HOST_DEVICE int64_t channel_run() const { return channels_last ? 1 : inner; }
  LOOM_HOST_DEVICE int64_t channel_of(int64_t i) const { return (i / channel_run()) % c; }
};

// The per-channel element type for data of type T.
template <typename T>
using bn_param_t = std::conditional_t<std::is_same_v<T, BFloat16>, float, T>;

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

// The normalised value before rounding to T and before any relu, in P (float for bfloat16 and
// float32 data, double for float64): (x - mean) * (invstd * weight) + bias. The relu's backward
// recomputes it from x, so both directions must evaluate this one expression.
template <typename T, typename P>
LOOM_HOST_DEVICE P bn_normalised(const BnChannels<P>& ch, int64_t c, T x) {
  const P w = ch.weight ? ch.weight[c] : P(1);
  const P b = ch.bias ? ch.bias[c] : P(0);
  return (static_cast<P>(x) - ch.mean[c]) * (ch.invstd[c] * w) + b;
}

// y = batch_norm(x), then relu(y) when `relu` (the fused batch_norm_relu): relu as loom::relu
// does it, on the rounded value (NaN passes).
template <typename T, typename P>
LOOM_HOST_DEVICE T bn_apply_at(const BnChannels<P>& ch, int64_t c, T x, bool relu) {
  const T y = static_cast<T>(bn_normalised(ch, c, x));
  return relu && y < T(0) ? T(0) : y;
}

// Whether the fused relu lets the gradient through at x: relu's output > 0, as relu_backward.
template <typename T, typename P>
LOOM_HOST_DEVICE bool bn_relu_passes(const BnChannels<P>& ch, int64_t c, T x) {
  return static_cast<T>(bn_normalised(ch, c, x)) > T(0);
}

// One element's terms of the gradient sums sum_dy = sum(dy) and sum_dy_xmu = sum(dy * (x - mean)),
// dy masked by a fused relu.
template <typename T, typename P>
LOOM_HOST_DEVICE void bn_add_grad_terms(const BnChannels<P>& ch, int64_t c, T x, T dy, bool relu,
                                        double& sum_dy, double& sum_dy_xmu) {
  if (relu && !bn_relu_passes(ch, c, x)) return;
  const double d = static_cast<double>(dy);
  sum_dy += d, sum_dy_xmu += d * (static_cast<double>(x) - ch.mean[c]);
}

// The parameters' gradients from those sums: d weight = sum(dy * xhat), d bias = sum(dy); either
// pointer may be null (not wanted).
template <typename P>
LOOM_HOST_DEVICE void bn_param_grads(const BnChannels<P>& ch, int64_t c, double sum_dy,
                                     double sum_dy_xmu, P* grad_weight, P* grad_bias) {
  if (grad_weight) grad_weight[c] = static_cast<P>(sum_dy_xmu * ch.invstd[c]);
  if (grad_bias) grad_bias[c] = static_cast<P>(sum_dy);
}

// The input gradient's per-channel coefficients, from sum_dy = sum(dy) and sum_dy_xmu =
// sum(dy * (x - mean)) over the channel's m elements (dy already masked by a fused relu):
// training: dx = gain * (dy - mean_dy - (x - mean) * proj), gain = w * invstd,
//   mean_dy = sum_dy / m, proj = invstd^2 * sum_dy_xmu / m;
// eval (statistics are constants): dx = gain * dy.
// Computed once per channel in double, applied per element in P.
template <typename P>
struct BnGradCoefficients {
  P* gain = nullptr;
  P* mean_dy = nullptr;
  P* proj = nullptr;
};

template <typename P>
LOOM_HOST_DEVICE void bn_finish_grad(const BnChannels<P>& ch, const BnGradCoefficients<P>& k,
                                     int64_t c, double sum_dy, double sum_dy_xmu, double count) {
  const double invstd = ch.invstd[c];
  const double w = ch.weight ? static_cast<double>(ch.weight[c]) : 1.0;
  k.gain[c] = static_cast<P>(w * invstd);
  k.mean_dy[c] = static_cast<P>(sum_dy / count);
  k.proj[c] = static_cast<P>(invstd * invstd * sum_dy_xmu / count);
}

template <typename T, typename P>
LOOM_HOST_DEVICE T bn_grad_input_at(const BnChannels<P>& ch, const BnGradCoefficients<P>& k,
                                    int64_t c, T x, T dy, bool training, bool relu) {
  const P d = relu && !bn_relu_passes(ch, c, x) ? P(0) : static_cast<P>(dy);
  if (!training) return static_cast<T>(k.gain[c] * d);
  return static_cast<T>(k.gain[c] *
                        (d - k.mean_dy[c] - (static_cast<P>(x) - ch.mean[c]) * k.proj[c]));
}

}  // namespace loom::detail
