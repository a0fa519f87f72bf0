// conv2d on cuDNN: forward, backward data and backward filter; the bias gradient is loom's own
// per-channel reduction (cuDNN's backward-bias kernel runs a few dozen blocks). Each pass runs
// the legacy algorithm or engine plan that conv_search.h chose for it, in workspace from the
// caching allocator.
#include <algorithm>
#include <type_traits>

#include "loom/ops/conv.h"
#include "loom/ops/conv_backend.h"
#include "loom/ops/cuda/channel_reduce.cuh"
#include "loom/ops/cuda/channels_last.cuh"
#include "loom/ops/cuda/conv_search.h"
#include "loom/ops/cuda/cudnn_handle.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

// cuDNN pads symmetrically. Keras' 'same' may put one more row/column after than before: the
// geometry cuDNN sees pads both sides by the smaller amount, and the input gets the rest as
// explicit zeros.
bool needs_extra_padding(const ConvGeometry& g) {
  return g.pad_top != g.pad_bottom || g.pad_left != g.pad_right;
}

ConvGeometry symmetric(const ConvGeometry& g) {
  ConvGeometry s = g;
  s.pad_top = s.pad_bottom = std::min(g.pad_top, g.pad_bottom);
  s.pad_left = s.pad_right = std::min(g.pad_left, g.pad_right);
  s.h = g.h + (g.pad_top - s.pad_top) + (g.pad_bottom - s.pad_bottom);
  s.w = g.w + (g.pad_left - s.pad_left) + (g.pad_right - s.pad_right);
  return s;
}

MemoryFormat format_of(const ConvGeometry& g) {
  return g.channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

Tensor pad_extra(const Tensor& x, const ConvGeometry& g, const ConvGeometry& s) {
  Tensor padded = empty({s.n, s.c, s.h, s.w}, x.options(), format_of(g));
  padded.zero_();
  padded.narrow(2, g.pad_top - s.pad_top, g.h).narrow(3, g.pad_left - s.pad_left, g.w).copy_(x);
  return padded;
}

// One call's descriptors, for the symmetric geometry s.
struct CudnnConv {
  DType dtype;
  int device;
  cudnnHandle_t handle;
  cuda::TensorDescriptor x, y;
  cuda::FilterDescriptor w;
  cuda::ConvolutionDescriptor conv;
  ConvGeometry s;
  bool tensor_ops;  // tensor cores allowed: see ConvCall

  CudnnConv(const ConvGeometry& geo, DType dt, int dev)
      : dtype(dt),
        device(dev),
        handle(cuda::cudnn_handle(dev)),
        x(dt, geo.n, geo.c, geo.h, geo.w, geo.channels_last),
        y(dt, geo.n, geo.o, geo.oh, geo.ow, geo.channels_last),
        w(dt, geo.o, geo.c, geo.kh, geo.kw, geo.channels_last),
        conv(dt, geo.pad_top, geo.pad_left, geo.stride_h, geo.stride_w, geo.dil_h, geo.dil_w),
        s(geo),
        tensor_ops(dt == kBFloat16 || (dt == kFloat32 && conv_allow_tf32())) {
    int n = 0, c = 0, h = 0, wd = 0;
    LOOM_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd));
    LOOM_ASSERT(n == geo.n && c == geo.o && h == geo.oh && wd == geo.ow, "cuDNN output ", h, "x",
                wd, " differs from loom's ", geo.oh, "x", geo.ow);
  }

  AlgoChoice algorithm(ConvPass pass, const ConvOperands& o) const {
    return conv_algorithm(
        pass, {dtype, device, handle, x.get(), y.get(), w.get(), conv.get(), s, tensor_ops}, o);
  }

  // Sets the descriptor to the math type `choice` runs with (before every call that uses it).
  void use(const AlgoChoice& choice) const {
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), choice.math));
  }

  Tensor workspace(size_t bytes) const { return conv_workspace(bytes, device); }
};

template <typename T>
struct SumTerm {
  const T* dy;
  __device__ void operator()(int64_t i, int64_t, double& a, double&) const { a += dy[i]; }
};

template <typename T>
struct StoreSum {
  T* out;
  __device__ void operator()(int64_t c, double a, double) const { out[c] = static_cast<T>(a); }
};

// grad_bias[o] = sum of dy[:, o, :, :], summed in double.
Tensor bias_grad(const Tensor& dy, const ConvGeometry& g) {
  Tensor out = empty({g.o}, dy.options());
  const int device = dy.device().index;
  LOOM_DISPATCH_FLOATING_AND_BF16(dy.dtype(), "conv2d backward", [&] {
    channel_reduce(ChannelLayout{g.n, g.o, g.oh * g.ow, g.channels_last},
                   SumTerm<scalar_t>{dy.data_ptr<scalar_t>()},
                   StoreSum<scalar_t>{out.data_ptr<scalar_t>()}, device,
                   cuda::current_stream(device));
  });
  return out;
}

// y[n, o, :, :] = act(y + bias[o]) in place, `Vec` elements a thread (4 for float data whose
// runs of one channel, NCHW planes, or whose channel rows, NHWC, are a multiple of 4 long: one
// 16-byte load and store). cudnnAddTensor took 136 us for the 126 MB of classic_cnn's first
// layer at batch 256, over twice what moving them costs.
template <typename T, int Vec, bool kChannelsLast>
__global__ void bias_relu_kernel(T* y, const T* bias, int64_t vectors, int64_t plane,
                                 int64_t channels, bool relu) {
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // The first element's channel; NCHW: the vector's other elements share it, NHWC: they
    // follow it.
    const int64_t c0 = kChannelsLast ? (v * Vec) % channels : (v * Vec / plane) % channels;
    T* p = y + v * Vec;
    T vals[Vec];
    if constexpr (Vec == 4) {
      const float4 in = *reinterpret_cast<const float4*>(p);
      vals[0] = in.x, vals[1] = in.y, vals[2] = in.z, vals[3] = in.w;
    } else {
      vals[0] = p[0];
    }
#pragma unroll
    for (int i = 0; i < Vec; ++i) {
      // In float for bfloat16 (one rounding, of the sum), in T otherwise.
      using Acc = std::conditional_t<std::is_same<T, BFloat16>::value, float, T>;
      const T b = bias != nullptr ? bias[kChannelsLast ? c0 + i : c0] : T(0.0f);
      Acc v = static_cast<Acc>(vals[i]) + static_cast<Acc>(b);
      if (relu && v < Acc(0)) v = Acc(0);  // relu's own rule: NaN and -0 pass
      vals[i] = static_cast<T>(v);
    }
    if constexpr (Vec == 4) {
      *reinterpret_cast<float4*>(p) = make_float4(vals[0], vals[1], vals[2], vals[3]);
    } else {
      p[0] = vals[0];
    }
  }
}

void add_bias_relu(const Tensor& y, const Tensor& bias, const ConvGeometry& g, bool relu) {
  const int device = y.device().index;
  const int64_t plane = g.oh * g.ow, n = y.numel();
  if (n == 0) return;
  cudaStream_t stream = cuda::current_stream(device);
  LOOM_DISPATCH_FLOATING_AND_BF16(y.dtype(), "conv2d", [&] {
    using T = scalar_t;
    const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
    const bool vec4 = std::is_same<T, float>::value && (g.channels_last ? g.o : plane) % 4 == 0;
    const int64_t vectors = vec4 ? n / 4 : n;
    const int threads = 256;
    const int blocks =
        static_cast<int>(std::min<int64_t>((vectors + threads - 1) / threads, 65536));
    auto launch = [&](auto vec, auto channels_last) {
      bias_relu_kernel<T, decltype(vec)::value, decltype(channels_last)::value>
          <<<blocks, threads, 0, stream>>>(y.data_ptr<T>(), b, vectors, plane, g.o, relu);
      LOOM_CUDA_KERNEL_CHECK();
    };
    auto launch_layout = [&](auto vec) {
      with_channels_last(g.channels_last, [&](auto cl) { launch(vec, cl); });
    };
    if (vec4) {
      launch_layout(std::integral_constant < int,
                    std::is_same<T, float>::value ? 4 : 1 > {});  // vec4: float
    } else {
      launch_layout(std::integral_constant<int, 1>{});
    }
  });
}

}  // namespace

std::string cuda_library_versions() {
  int runtime = 0;
  LOOM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const size_t dnn = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return detail::concat("CUDA runtime ", runtime / 1000, ".", runtime % 1000 / 10, ", cuDNN ",
                        dnn / 10000, ".", dnn % 10000 / 100, ".", dnn % 100);
}

Tensor cuda_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const ConvGeometry& g, bool relu) {
  const int device = x.device().index;
  cuda::DeviceGuard guard(device);
  const ConvGeometry s = symmetric(g);
  const Tensor xs = needs_extra_padding(g) ? pad_extra(x, g, s) : x;
  Tensor y = empty({g.n, g.o, g.oh, g.ow}, x.options(), format_of(g));
  const CudnnConv c(s, x.dtype(), device);
  const ConvOperands operands{xs.raw_data(), weight.raw_data(), y.raw_data()};
  const AlgoChoice algo = c.algorithm(ConvPass::Forward, operands);
  const Tensor ws = c.workspace(algo.workspace);
  if (algo.engine) {
    algo.engine->run(c.handle, operands, data_or_null(ws));
  } else {
    c.use(algo);
    LOOM_CUDNN_CHECK(cudnnConvolutionForward(
        c.handle, cuda::cudnn_one(c.dtype), c.x.get(), xs.raw_data(), c.w.get(), weight.raw_data(),
        c.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), data_or_null(ws),
        algo.workspace, cuda::cudnn_zero(c.dtype), c.y.get(), y.raw_data()));
  }
  if (bias.defined() || relu) add_bias_relu(y, bias, g, relu);
  return y;
}

ConvGrads cuda_conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                               const ConvGeometry& g, bool need_input, bool need_weight,
                               bool need_bias) {
  const int device = x.device().index;
  cuda::DeviceGuard guard(device);
  const ConvGeometry s = symmetric(g);
  const bool extra = needs_extra_padding(g);
  const CudnnConv c(s, x.dtype(), device);
  const void* one = cuda::cudnn_one(c.dtype);
  const void* zero = cuda::cudnn_zero(c.dtype);
  ConvGrads grads;
  if (need_bias) grads.bias = bias_grad(grad_out, g);
  if (need_weight) {
    grads.weight = empty(weight.shape(), weight.options(), format_of(g));
    const Tensor xs = extra ? pad_extra(x, g, s) : x;
    const ConvOperands operands{xs.raw_data(), grads.weight.raw_data(), grad_out.raw_data()};
    const AlgoChoice algo = c.algorithm(ConvPass::BackwardFilter, operands);
    const Tensor ws = c.workspace(algo.workspace);
    if (algo.engine) {
      algo.engine->run(c.handle, operands, data_or_null(ws));
    } else {
      c.use(algo);
      LOOM_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          c.handle, one, c.x.get(), xs.raw_data(), c.y.get(), grad_out.raw_data(), c.conv.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), data_or_null(ws), algo.workspace,
          zero, c.w.get(), grads.weight.raw_data()));
    }
  }
  if (need_input) {
    Tensor dxs = empty({s.n, s.c, s.h, s.w}, x.options(), format_of(g));
    const ConvOperands operands{dxs.raw_data(), weight.raw_data(), grad_out.raw_data()};
    const AlgoChoice algo = c.algorithm(ConvPass::BackwardData, operands);
    const Tensor ws = c.workspace(algo.workspace);
    if (algo.engine) {
      algo.engine->run(c.handle, operands, data_or_null(ws));
    } else {
      c.use(algo);
      LOOM_CUDNN_CHECK(cudnnConvolutionBackwardData(
          c.handle, one, c.w.get(), weight.raw_data(), c.y.get(), grad_out.raw_data(), c.conv.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), data_or_null(ws), algo.workspace,
          zero, c.x.get(), dxs.raw_data()));
    }
    grads.input = extra ? dxs.narrow(2, g.pad_top - s.pad_top, g.h)
                              .narrow(3, g.pad_left - s.pad_left, g.w)
                              .contiguous(format_of(g))
                        : dxs;
  }
  return grads;
}

}  // namespace loom::detail
