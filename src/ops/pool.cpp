// Pooling ops: argument checks, window geometry, device dispatch and autograd nodes. The
// per-element rules are in pool_math.h; loops in cpu/pool.cpp, kernels in cuda/pool.cu.
#include "loom/ops/pool.h"

#include "loom/ops/dispatch.h"
#include "loom/ops/pool_backend.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

void check_input(const char* op, const Tensor& x) {
  LOOM_CHECK(x.defined(), op, ": input is undefined");
  LOOM_CHECK(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ",
             shape_str(x.shape()));
  LOOM_CHECK(is_floating(x.dtype()), op, ": input must be floating point, got ", x.dtype());
  LOOM_CHECK(x.numel() > 0, op, ": input ", shape_str(x.shape()), " is empty");
}

detail::PoolAxis fixed_axis(const char* op, const char* name, int64_t in, int64_t kernel,
                            int64_t stride, int64_t pad) {
  detail::PoolAxis a;
  a.out = pool2d_output_size(op, name, in, kernel, stride, pad);
  LOOM_CHECK(a.out >= 1, op, ": ", name, " kernel ", kernel, " is larger than the padded input ",
             in + 2 * pad);
  a.in = in, a.kernel = kernel, a.stride = stride == 0 ? kernel : stride, a.pad = pad;
  return a;
}

// CUDA keeps a channels-last input's layout; the CPU reads everything as NCHW.
void set_layout(detail::PoolGeometry& g, const Tensor& x) {
  g.planes = x.size(0) * x.size(1);
  g.channels = x.size(1);
  g.channels_last = x.is_cuda() && x.suggest_memory_format() == MemoryFormat::ChannelsLast;
}

MemoryFormat format_of(const detail::PoolGeometry& g) {
  return g.channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

detail::PoolGeometry fixed_geometry(const char* op, const Tensor& x, Size2 kernel, Size2 stride,
                                    Size2 padding) {
  check_input(op, x);
  detail::PoolGeometry g;
  set_layout(g, x);
  g.y = fixed_axis(op, "height", x.size(2), kernel.h, stride.h, padding.h);
  g.x = fixed_axis(op, "width", x.size(3), kernel.w, stride.w, padding.w);
  return g;
}

Shape out_shape(const Tensor& x, const detail::PoolGeometry& g) {
  return {x.size(0), x.size(1), g.y.out, g.x.out};
}

// Records a pool's backward: dx, shaped and laid out like x, is written by backward(dy, dx) on
// dy's device.
template <typename Backward>
Tensor record_pool(const char* name, const Tensor& x, const detail::PoolGeometry& g, Tensor out,
                   Backward backward) {
  const Shape in_shape = x.shape();
  const TensorOptions options = x.options();
  const MemoryFormat format = format_of(g);
  return record(name, out, {x}, [backward, in_shape, options, format](const Tensor& grad) {
    const Tensor dy = grad.contiguous(format);
    Tensor dx = empty(in_shape, options, format);
    backward(dy, dx);
    return std::vector<Tensor>{dx};
  });
}

Tensor avg_pool(const char* name, const Tensor& x_in, const detail::PoolGeometry& g,
                bool include_pad) {
  const Tensor x = x_in.contiguous(format_of(g));
  Tensor out = empty(out_shape(x, g), x.options(), format_of(g));
  if (x.is_cuda()) {
    LOOM_CUDA_DISPATCH(name, detail::cuda_avg_pool2d(x, g, include_pad, out));
  } else {
    detail::cpu_avg_pool2d(x, g, include_pad, out);
  }
  return record_pool(name, x_in, g, out, [g, include_pad](const Tensor& dy, const Tensor& dx) {
    if (dy.is_cuda()) {
      LOOM_CUDA_DISPATCH("avg_pool2d backward",
                         detail::cuda_avg_pool2d_backward(dy, g, include_pad, dx));
    } else {
      detail::cpu_avg_pool2d_backward(dy, g, include_pad, dx);
    }
  });
}

}  // namespace

int64_t pool2d_output_size(const char* op, const char* axis, int64_t in, int64_t kernel,
                           int64_t stride, int64_t pad) {
  if (stride == 0) stride = kernel;
  LOOM_CHECK(kernel >= 1 && stride >= 1 && pad >= 0, op, ": ", axis, " kernel ", kernel,
             " and stride ", stride, " must be >= 1 and padding ", pad, " >= 0");
  LOOM_CHECK(2 * pad <= kernel, op, ": ", axis, " padding ", pad,
             " must be at most half the kernel size ", kernel);
  return kernel <= in + 2 * pad ? (in + 2 * pad - kernel) / stride + 1 : 0;
}

// Saves each window's winner as its offset in the window (pool_math.h), one byte for the
// usual kernels; the backward sends each output's gradient to that one input pixel.
Tensor max_pool2d(const Tensor& x_in, Size2 kernel, Size2 stride, Size2 padding) {
  const detail::PoolGeometry g = fixed_geometry("max_pool2d", x_in, kernel, stride, padding);
  const Tensor x = x_in.contiguous(format_of(g));
  Tensor out = empty(out_shape(x, g), x.options(), format_of(g));
  const Tensor offsets =
      empty(out_shape(x, g), TensorOptions(detail::max_pool_offset_dtype(g)).device(x.device()),
            format_of(g));
  if (x.is_cuda()) {
    LOOM_CUDA_DISPATCH("max_pool2d", detail::cuda_max_pool2d(x, g, out, offsets));
  } else {
    detail::cpu_max_pool2d(x, g, out, offsets);
  }
  return record_pool("max_pool2d", x_in, g, out, [g, offsets](const Tensor& dy, const Tensor& dx) {
    if (dy.is_cuda()) {
      LOOM_CUDA_DISPATCH("max_pool2d backward",
                         detail::cuda_max_pool2d_backward(dy, offsets, g, dx));
    } else {
      detail::cpu_max_pool2d_backward(dy, offsets, g, dx);
    }
  });
}

Tensor avg_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding,
                  bool count_include_pad) {
  return avg_pool("avg_pool2d", x, fixed_geometry("avg_pool2d", x, kernel, stride, padding),
                  count_include_pad);
}

Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w) {
  check_input("adaptive_avg_pool2d", x);
  LOOM_CHECK(out_h >= 1 && out_w >= 1, "adaptive_avg_pool2d: output size ", out_h, "x", out_w,
             " must be positive");
  detail::PoolGeometry g;
  set_layout(g, x);
  g.y.in = x.size(2), g.y.out = out_h, g.y.adaptive = true;
  g.x.in = x.size(3), g.x.out = out_w, g.x.adaptive = true;
  return avg_pool("adaptive_avg_pool2d", x, g, true);
}

Tensor global_avg_pool2d(const Tensor& x) { return adaptive_avg_pool2d(x, 1, 1); }

}  // namespace loom
