// conv2d: argument checks, output geometry (explicit, 'valid' and 'same' padding), device
// dispatch and the autograd node. The kernels live in cpu/conv.cpp and cuda/conv.cu.
#include "loom/ops/conv.h"

#include <atomic>

#include "loom/ops/activation.h"
#include "loom/ops/conv_backend.h"
#include "loom/ops/dispatch.h"
#include "loom/ops/elementwise_backend.h"
#include "loom/tensor/autocast.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

std::atomic<bool> g_deterministic{false};
std::atomic<bool> g_benchmark{false};
std::atomic<bool> g_allow_tf32{true};
std::atomic<bool> g_engines_only{false};
std::atomic<int64_t> g_benchmark_limit{16};

detail::ConvGeometry geometry(const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Conv2dOptions& opt) {
  LOOM_CHECK(x.defined() && weight.defined(), "conv2d: input and weight must be defined");
  LOOM_CHECK(x.dim() == 4, "conv2d: input must be 4-D [N, C, H, W], got shape ",
             shape_str(x.shape()));
  LOOM_CHECK(weight.dim() == 4, "conv2d: weight must be 4-D [O, C, kh, kw], got shape ",
             shape_str(weight.shape()));
  LOOM_CHECK(x.size(1) == weight.size(1), "conv2d: input has ", x.size(1), " channels but weight ",
             shape_str(weight.shape()), " expects ", weight.size(1));
  LOOM_CHECK(is_floating(x.dtype()), "conv2d: input must be floating point, got ", x.dtype());
  LOOM_CHECK(weight.dtype() == x.dtype(), "conv2d: weight dtype ", weight.dtype(),
             " differs from input dtype ", x.dtype());
  LOOM_CHECK(weight.device() == x.device(), "conv2d: weight on ", weight.device(), " but input on ",
             x.device());
  if (bias.defined()) {
    LOOM_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "conv2d: bias shape ",
               shape_str(bias.shape()), " does not match ", weight.size(0), " output channels");
    LOOM_CHECK(bias.dtype() == x.dtype() && bias.device() == x.device(),
               "conv2d: bias must have the input's dtype and device");
  }
  for (int a = 0; a < 2; ++a) {
    LOOM_CHECK(opt.stride_[a] >= 1 && opt.dilation_[a] >= 1 && opt.padding_[a] >= 0,
               "conv2d: stride (", opt.stride_[0], ", ", opt.stride_[1], ") and dilation (",
               opt.dilation_[0], ", ", opt.dilation_[1], ") must be >= 1 and padding (",
               opt.padding_[0], ", ", opt.padding_[1], ") >= 0");
  }
  LOOM_CHECK(x.numel() > 0 && weight.numel() > 0, "conv2d: empty input ", shape_str(x.shape()),
             " or weight ", shape_str(weight.shape()));
  detail::ConvGeometry g;
  g.n = x.size(0), g.c = x.size(1), g.h = x.size(2), g.w = x.size(3);
  g.o = weight.size(0), g.kh = weight.size(2), g.kw = weight.size(3);
  g.stride_h = opt.stride_[0], g.stride_w = opt.stride_[1];
  g.dil_h = opt.dilation_[0], g.dil_w = opt.dilation_[1];
  const ConvAxis ah = conv2d_axis(opt, 0, g.h, g.kh), aw = conv2d_axis(opt, 1, g.w, g.kw);
  g.pad_top = ah.pad_before, g.pad_bottom = ah.pad_after, g.pad_left = aw.pad_before,
  g.pad_right = aw.pad_after;
  g.oh = ah.out, g.ow = aw.out;
  LOOM_CHECK(g.oh >= 1 && g.ow >= 1, "conv2d: kernel ", g.kh, "x", g.kw, " (dilated extent ",
             g.dil_h * (g.kh - 1) + 1, "x", g.dil_w * (g.kw - 1) + 1,
             ") is larger than the padded input ", g.h + g.pad_top + g.pad_bottom, "x",
             g.w + g.pad_left + g.pad_right);
  return g;
}

}  // namespace

ConvAxis conv2d_axis(const Conv2dOptions& opt, int axis, int64_t in, int64_t kernel) {
  const int64_t s = opt.stride_[axis];
  const int64_t span = opt.dilation_[axis] * (kernel - 1) + 1;
  ConvAxis a;
  switch (opt.padding_mode_) {
    case Padding::Valid:
      break;
    case Padding::Same: {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>((out - 1) * s + span - in, 0);
      a.pad_before = total / 2, a.pad_after = total - total / 2;
      break;
    }
    case Padding::Explicit:
      a.pad_before = a.pad_after = opt.padding_[axis];
      break;
  }
  const int64_t padded = in + a.pad_before + a.pad_after;
  a.out = padded >= span ? (padded - span) / s + 1 : 0;
  return a;
}

void set_deterministic(bool deterministic) { g_deterministic = deterministic; }
bool deterministic() { return g_deterministic; }
void set_conv_benchmark(bool benchmark) { g_benchmark = benchmark; }
bool conv_benchmark() { return g_benchmark; }
void set_conv_benchmark_limit(int64_t limit) {
  LOOM_CHECK(limit >= 0,
             "set_conv_benchmark_limit: the limit must be 0 (time every engine) or positive, got ",
             limit);
  g_benchmark_limit = limit;
}
int64_t conv_benchmark_limit() { return g_benchmark_limit; }

void set_conv_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool conv_allow_tf32() { return g_allow_tf32; }

int64_t conv_algorithm_searches() {
#if defined(LOOM_WITH_CUDA)
  return detail::cuda_conv_algorithm_searches();
#else
  return 0;
#endif
}

double conv_algorithm_search_seconds() {
#if defined(LOOM_WITH_CUDA)
  return detail::cuda_conv_algorithm_search_seconds();
#else
  return 0;
#endif
}

int64_t conv_engine_choices() {
#if defined(LOOM_WITH_CUDA)
  return detail::cuda_conv_engine_choices();
#else
  return 0;
#endif
}

namespace detail {
void set_conv_search_engines_only(bool engines_only) { g_engines_only = engines_only; }
bool conv_search_engines_only() { return g_engines_only; }
}  // namespace detail

std::string cuda_library_versions() {
#if defined(LOOM_WITH_CUDA)
  return detail::cuda_library_versions();
#else
  return "";
#endif
}

namespace {

// conv2d, followed by relu when `relu` (CUDA only: one pass adds the bias and applies it).
Tensor conv2d_impl(const char* name, const Tensor& x_in, const Tensor& weight_in,
                   const Tensor& bias_in, const Conv2dOptions& options, bool relu) {
  detail::ConvGeometry g = geometry(x_in, weight_in, bias_in, options);
  // A channels-last input on CUDA runs channels-last (cuDNN's tensor-core kernels then need no
  // transposes): the weight is laid out so for the call, the output and the input's gradient
  // come out channels-last, and the weight's gradient goes back in the weight's own layout.
  const MemoryFormat format =
      x_in.is_cuda() ? x_in.suggest_memory_format() : MemoryFormat::Contiguous;
  const MemoryFormat weight_format = weight_in.suggest_memory_format();
  g.channels_last = format == MemoryFormat::ChannelsLast;
  const Tensor x = x_in.detach().contiguous(format);
  const Tensor weight = weight_in.detach().contiguous(format);
  const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
  Tensor out;
  if (x.is_cuda()) {
    LOOM_CUDA_DISPATCH(name, out = detail::cuda_conv2d_forward(x, weight, bias, g, relu));
  } else {
    LOOM_ASSERT(!relu, "conv2d_relu's fused pass is CUDA's");
    out = detail::cpu_conv2d_forward(x, weight, bias, g);
  }
  const bool need_input = x_in.requires_grad(), need_weight = weight_in.requires_grad();
  const bool need_bias = bias_in.defined() && bias_in.requires_grad();
  // Saves the (contiguous) input and weight: each gradient needs the other operand; with relu,
  // the output too, whose sign gates the gradient as relu's backward does.
  const Tensor y = relu ? out.detach() : Tensor();
  return record(
      name, out, {x_in, weight_in, bias_in},
      [x, weight, g, y, format, weight_format, need_input, need_weight,
       need_bias](const Tensor& grad) {
        const Tensor dy = (y.defined() ? detail::run_floating(detail::ElementwiseOp::ReluBackward,
                                                              "conv2d_relu backward", {grad, y})
                                       : grad)
                              .contiguous(format);
        detail::ConvGrads r;
        if (dy.is_cuda()) {
          LOOM_CUDA_DISPATCH("conv2d backward",
                             r = detail::cuda_conv2d_backward(dy, x, weight, g, need_input,
                                                              need_weight, need_bias));
        } else {
          r = detail::cpu_conv2d_backward(dy, x, weight, g, need_input, need_weight, need_bias);
        }
        if (r.weight.defined()) r.weight = r.weight.contiguous(weight_format);
        return std::vector<Tensor>{r.input, r.weight, r.bias};
      });
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  using detail::autocast_operand;
  return conv2d_impl("conv2d", autocast_operand(x), autocast_operand(weight),
                     autocast_operand(bias), options, false);
}

Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Conv2dOptions& options) {
  if (!x.is_cuda()) return relu(conv2d(x, weight, bias, options));
  using detail::autocast_operand;
  return conv2d_impl("conv2d_relu", autocast_operand(x), autocast_operand(weight),
                     autocast_operand(bias), options, true);
}

}  // namespace loom
