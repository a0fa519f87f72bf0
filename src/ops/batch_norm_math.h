// Internal: batch norm's per-channel and per-element rules, compiled into both the CPU loops
// (cpu/batch_norm.cpp) and the CUDA kernels (cuda/batch_norm.cu). x is viewed as
// [n, c, inner]; per-channel tensors (mean, invstd, weight, bias, running stats) have x's dtype,
// float32 for bfloat16 x (bn_param_t: mixed precision keeps statistics and parameters in
// float32); sums run in double.
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

template <typename T, typename P>
LOOM_HOST_DEVICE T bn_apply_at(const BnChannels<P>& ch, int64_t c, T x) {
  const double w = ch.weight ? static_cast<double>(ch.weight[c]) : 1.0;
  const double b = ch.bias ? static_cast<double>(ch.bias[c]) : 0.0;
  return static_cast<T>((static_cast<double>(x) - ch.mean[c]) * ch.invstd[c] * w + b);
}

// dx from dy, given per channel sum_dy = sum(dy) and sum_dy_xmu = sum(dy * (x - mean)).
// Training: dx = w * invstd * (dy - sum_dy / m - xhat * invstd * sum_dy_xmu / m);
// eval (statistics are constants): dx = w * invstd * dy.
template <typename T, typename P>
LOOM_HOST_DEVICE T bn_grad_input_at(const BnChannels<P>& ch, int64_t c, T x, T dy, double sum_dy,
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

}  // namespace loom::detail
