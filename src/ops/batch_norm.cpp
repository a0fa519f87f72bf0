// batch_norm and batch_norm_relu: argument checks, train/eval statistics, device dispatch and
// the autograd node (which saves the per-channel mean and 1/std, not the normalised output: the
// fused relu's mask is recomputed from x).
#include "loom/ops/batch_norm.h"

#include <algorithm>

#include "loom/ops/batch_norm_backend.h"
#include "loom/ops/dispatch.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

// The dtype of the per-channel tensors: the input's, float32 for bfloat16 input (mixed
// precision keeps statistics and parameters in float32).
DType channel_dtype(const Tensor& x) { return x.dtype() == kBFloat16 ? kFloat32 : x.dtype(); }

void check_channel_tensor(const Tensor& t, const char* name, const Tensor& x) {
  if (!t.defined()) return;
  LOOM_CHECK(t.dim() == 1 && t.size(0) == x.size(1), "batch_norm: ", name, " has shape ",
             shape_str(t.shape()), " but the input ", shape_str(x.shape()), " has ", x.size(1),
             " channels");
  LOOM_CHECK(t.dtype() == channel_dtype(x) && t.device() == x.device(), "batch_norm: ", name, " (",
             t.dtype(), ", ", t.device(), ") must be ", channel_dtype(x),
             " on the input's device (the input is ", x.dtype(), " on ", x.device(), ")");
}

Tensor batch_norm_impl(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum, double eps, bool relu) {
  const char* name = relu ? "batch_norm_relu" : "batch_norm";
  LOOM_CHECK(x_in.defined(), "batch_norm: input is undefined");
  LOOM_CHECK(x_in.dim() >= 2, "batch_norm: input must be [N, C, ...], got shape ",
             shape_str(x_in.shape()));
  LOOM_CHECK(is_floating(x_in.dtype()), "batch_norm: input must be floating point, got ",
             x_in.dtype());
  LOOM_CHECK(eps > 0, "batch_norm: eps must be positive, got ", eps);
  LOOM_CHECK(momentum >= 0 && momentum <= 1, "batch_norm: momentum must be in [0, 1], got ",
             momentum);
  check_channel_tensor(weight_in, "weight", x_in);
  check_channel_tensor(bias_in, "bias", x_in);
  check_channel_tensor(running_mean, "running_mean", x_in);
  check_channel_tensor(running_var, "running_var", x_in);
  LOOM_CHECK(running_mean.defined() == running_var.defined(),
             "batch_norm: give both running_mean and running_var, or neither");
  LOOM_CHECK(training || running_mean.defined(),
             "batch_norm: eval mode needs running_mean and running_var");
  LOOM_CHECK(
      !running_mean.defined() || (running_mean.is_contiguous() && running_var.is_contiguous()),
      "batch_norm: running_mean and running_var are updated in place and must be contiguous");

  detail::BnGeometry g;
  g.n = x_in.size(0), g.c = x_in.size(1), g.inner = x_in.numel() / std::max<int64_t>(1, g.n * g.c);
  LOOM_CHECK(x_in.numel() > 0, "batch_norm: input ", shape_str(x_in.shape()), " is empty");
  LOOM_CHECK(!training || g.n * g.inner > 1,
             "batch_norm: training needs more than one value per "
             "channel, got input shape ",
             shape_str(x_in.shape()));

  // CUDA keeps a channels-last input's layout (output and input gradient alike); the CPU reads
  // everything as NCHW.
  const MemoryFormat format =
      x_in.is_cuda() ? x_in.suggest_memory_format() : MemoryFormat::Contiguous;
  g.channels_last = format == MemoryFormat::ChannelsLast;
  const Tensor x = x_in.contiguous(format);
  const Tensor weight = weight_in.defined() ? weight_in.contiguous() : Tensor();
  const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
  const TensorOptions channel_options = x.options().dtype(channel_dtype(x));
  const Tensor mean = empty({g.c}, channel_options), invstd = empty({g.c}, channel_options);
  Tensor out = empty(x.shape(), x.options(), format);
  if (x.is_cuda()) {
    LOOM_CUDA_DISPATCH("batch_norm", {
      if (training) {
        detail::cuda_batch_norm_stats(x, g, mean, invstd, running_mean, running_var, momentum, eps);
      } else {
        detail::cuda_batch_norm_eval_stats(running_mean, running_var, eps, mean, invstd);
      }
      detail::cuda_batch_norm_apply(x, g, mean, invstd, weight, bias, relu, out);
    });
  } else {
    if (training) {
      detail::cpu_batch_norm_stats(x, g, mean, invstd, running_mean, running_var, momentum, eps);
    } else {
      detail::cpu_batch_norm_eval_stats(running_mean, running_var, eps, mean, invstd);
    }
    detail::cpu_batch_norm_apply(x, g, mean, invstd, weight, bias, relu, out);
  }

  const bool need_input = x_in.requires_grad();
  const bool need_weight = weight_in.defined() && weight_in.requires_grad();
  const bool need_bias = bias_in.defined() && bias_in.requires_grad();
  return record(name, out, {x_in, weight_in, bias_in},
                [x, weight, bias, mean, invstd, g, format, training, relu, need_input, need_weight,
                 need_bias](const Tensor& grad) {
                  const Tensor dy = grad.contiguous(format);
                  const Tensor dx = need_input ? empty(x.shape(), x.options(), format) : Tensor();
                  const Tensor dw = need_weight ? empty({g.c}, mean.options()) : Tensor();
                  const Tensor db = need_bias ? empty({g.c}, mean.options()) : Tensor();
                  if (dy.is_cuda()) {
                    LOOM_CUDA_DISPATCH(
                        "batch_norm backward",
                        detail::cuda_batch_norm_backward(dy, x, g, mean, invstd, weight, bias, relu,
                                                         training, dx, dw, db));
                  } else {
                    detail::cpu_batch_norm_backward(dy, x, g, mean, invstd, weight, bias, relu,
                                                    training, dx, dw, db);
                  }
                  return std::vector<Tensor>{dx, dw, db};
                });
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps,
                         /*relu=*/false);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum, double eps) {
  return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps,
                         /*relu=*/true);
}

}  // namespace loom
