// batch_norm on CUDA: per-channel sums by channel_reduce.cuh (chunks of each channel reduced
// in double by separate blocks, then combined in a fixed order: deterministic, and the GPU is
// filled even for 64 channels), elementwise kernels for the rest, all by the shared rules of
// batch_norm_math.h. Each sum pass fuses both of its terms (sum x and sum x^2; sum dy and
// sum dy * (x - mean)) into one read of the data. The elementwise passes read and write 16
// bytes a thread when the layout allows (see vectorisable), NCHW or channels-last alike, and
// apply batch_norm_relu's relu (forward) and its mask, recomputed from x (backward), in place.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "loom/ops/batch_norm_backend.h"
#include "loom/ops/cuda/channel_reduce.cuh"
#include "loom/ops/cuda/channels_last.cuh"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/cuda/vector_pack.cuh"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) {
  return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32);
}

// 32-bit element indices (cheaper channel_of divisions) when i + the grid stride fits.
bool fits_int32(int64_t n) {
  return n + 65535LL * 32 * kThreads < std::numeric_limits<int32_t>::max();
}

template <typename T>
T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

cudaStream_t stream_of(const Tensor& t) { return cuda::current_stream(t.device().index); }

ChannelLayout layout(const BnGeometry& g) { return {g.n, g.c, g.inner, g.channels_last}; }

template <typename T>
struct MomentsTerm {
  const T* x;
  __device__ void operator()(int64_t i, int64_t, double& a, double& b) const {
    const double v = x[i];
    a += v, b += v * v;
  }
};

template <typename T>
struct StatsFinish {
  BnChannels<T> ch;
  double count, momentum, eps;
  __device__ void operator()(int64_t c, double a, double b) const {
    bn_finish_stats(ch, c, a, b, count, momentum, eps);
  }
};

// sum(dy) and sum(dy * (x - mean)), dy masked by a fused relu.
template <typename T, typename P>
struct GradTerm {
  const T* x;
  const T* dy;
  BnChannels<P> ch;
  bool relu;
  __device__ void operator()(int64_t i, int64_t c, double& a, double& b) const {
    bn_add_grad_terms(ch, c, x[i], dy[i], relu, a, b);
  }
};

template <typename P>
struct GradFinish {
  BnChannels<P> ch;
  BnGradCoefficients<P> k;
  double count;
  P* grad_weight;
  P* grad_bias;
  __device__ void operator()(int64_t c, double a, double b) const {
    bn_finish_grad(ch, k, c, a, b, count);
    bn_param_grads(ch, c, a, b, grad_weight, grad_bias);
  }
};

template <typename T>
__global__ void eval_stats_kernel(const T* running_mean, const T* running_var, double eps, T* mean,
                                  T* invstd, int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < c;
       i += int64_t(gridDim.x) * blockDim.x) {
    mean[i] = running_mean[i];
    invstd[i] = static_cast<T>(1.0 / sqrt(static_cast<double>(running_var[i]) + eps));
  }
}

template <typename I>
__device__ __forceinline__ I channel_at(I i, I inner, I channels) {
  return (i / inner) % channels;
}

template <typename I, typename T, typename P>
__global__ void apply_kernel(const T* x, BnChannels<P> ch, BnGeometry g, bool relu, T* out, I n) {
  const I inner = static_cast<I>(g.channel_run()), channels = static_cast<I>(g.c);
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * I(blockDim.x)) {
    out[i] = bn_apply_at(ch, channel_at(i, inner, channels), x[i], relu);
  }
}

template <typename I, typename T, typename P>
__global__ void grad_input_kernel(const T* x, const T* dy, BnChannels<P> ch,
                                  BnGradCoefficients<P> k, BnGeometry g, bool training, bool relu,
                                  T* dx, I n) {
  const I inner = static_cast<I>(g.channel_run()), channels = static_cast<I>(g.c);
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * I(blockDim.x)) {
    dx[i] = bn_grad_input_at(ch, k, channel_at(i, inner, channels), x[i], dy[i], training, relu);
  }
}

// The vectorised kernels' condition: 16-byte aligned data whose vectors each lie in one channel
// (NCHW: planes a multiple of the vector long) or span consecutive channels (NHWC: a channel
// count that is a multiple of it), so one division finds every element's channel.
template <typename T>
bool vectorisable(const BnGeometry& g, std::initializer_list<const void*> data) {
  constexpr int64_t v = Pack16<T>::kSize;
  if ((g.channels_last ? g.c : g.inner) % v != 0) return false;
  for (const void* p : data) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  }
  return true;
}

template <bool kCL, typename I>
__device__ __forceinline__ I first_channel(I i0, I inner, I channels) {
  return kCL ? i0 % channels : (i0 / inner) % channels;
}

template <bool kCL, typename I, typename T, typename P>
__global__ void apply_vec_kernel(const T* x, BnChannels<P> ch, BnGeometry g, bool relu, T* out,
                                 I vectors) {
  using Pack = Pack16<T>;
  const I inner = static_cast<I>(g.inner), channels = static_cast<I>(g.c);
  for (I v = blockIdx.x * I(blockDim.x) + threadIdx.x; v < vectors;
       v += I(gridDim.x) * I(blockDim.x)) {
    const I c0 = first_channel<kCL>(v * Pack::kSize, inner, channels);
    const Pack in = reinterpret_cast<const Pack*>(x)[v];
    Pack o;
#pragma unroll
    for (int k = 0; k < Pack::kSize; ++k)
      o.v[k] = bn_apply_at(ch, kCL ? c0 + k : c0, in.v[k], relu);
    reinterpret_cast<Pack*>(out)[v] = o;
  }
}

template <bool kCL, typename I, typename T, typename P>
__global__ void grad_input_vec_kernel(const T* x, const T* dy, BnChannels<P> ch,
                                      BnGradCoefficients<P> k, BnGeometry g, bool training,
                                      bool relu, T* dx, I vectors) {
  using Pack = Pack16<T>;
  const I inner = static_cast<I>(g.inner), channels = static_cast<I>(g.c);
  for (I v = blockIdx.x * I(blockDim.x) + threadIdx.x; v < vectors;
       v += I(gridDim.x) * I(blockDim.x)) {
    const I c0 = first_channel<kCL>(v * Pack::kSize, inner, channels);
    const Pack xs = reinterpret_cast<const Pack*>(x)[v], dys = reinterpret_cast<const Pack*>(dy)[v];
    Pack o;
#pragma unroll
    for (int j = 0; j < Pack::kSize; ++j) {
      o.v[j] = bn_grad_input_at(ch, k, kCL ? c0 + j : c0, xs.v[j], dys.v[j], training, relu);
    }
    reinterpret_cast<Pack*>(dx)[v] = o;
  }
}

}  // namespace

void cuda_batch_norm_stats(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                           const Tensor& invstd, const Tensor& running_mean,
                           const Tensor& running_var, double momentum, double eps) {
  cuda::DeviceGuard guard(x.device().index);
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "batch_norm", [&] {
    using P = bn_param_t<scalar_t>;
    StatsFinish<P> finish;
    finish.ch.mean = mean.data_ptr<P>(), finish.ch.invstd = invstd.data_ptr<P>();
    finish.ch.running_mean = ptr_or_null<P>(running_mean);
    finish.ch.running_var = ptr_or_null<P>(running_var);
    finish.count = g.count(), finish.momentum = momentum, finish.eps = eps;
    channel_reduce(layout(g), MomentsTerm<scalar_t>{x.data_ptr<scalar_t>()}, finish,
                   x.device().index, stream_of(x));
  });
}

void cuda_batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                                const Tensor& mean, const Tensor& invstd) {
  cuda::DeviceGuard guard(mean.device().index);
  const int64_t c = mean.numel();
  LOOM_DISPATCH_FLOATING(mean.dtype(), "batch_norm", [&] {
    eval_stats_kernel<<<blocks_for(c), kThreads, 0, stream_of(mean)>>>(
        running_mean.data_ptr<scalar_t>(), running_var.data_ptr<scalar_t>(), eps,
        mean.data_ptr<scalar_t>(), invstd.data_ptr<scalar_t>(), c);
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_batch_norm_apply(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                           const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                           bool relu, const Tensor& out) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = x.numel();
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "batch_norm", [&] {
    using P = bn_param_t<scalar_t>;
    BnChannels<P> ch;
    ch.mean = mean.data_ptr<P>(), ch.invstd = invstd.data_ptr<P>();
    ch.weight = ptr_or_null<P>(weight), ch.bias = ptr_or_null<P>(bias);
    const scalar_t* xd = x.data_ptr<scalar_t>();
    scalar_t* od = out.data_ptr<scalar_t>();
    if (vectorisable<scalar_t>(g, {xd, od}) && fits_int32(n)) {
      const int32_t vectors = static_cast<int32_t>(n / Pack16<scalar_t>::kSize);
      with_channels_last(g.channels_last, [&](auto cl) {
        apply_vec_kernel<decltype(cl)::value>
            <<<blocks_for(vectors), kThreads, 0, stream_of(x)>>>(xd, ch, g, relu, od, vectors);
        LOOM_CUDA_KERNEL_CHECK();
      });
      return;
    }
    if (fits_int32(n)) {
      apply_kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(xd, ch, g, relu, od,
                                                                 static_cast<int32_t>(n));
    } else {
      apply_kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(xd, ch, g, relu, od, n);
    }
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_batch_norm_backward(const Tensor& dy, const Tensor& x, const BnGeometry& g,
                              const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                              const Tensor& bias, bool relu, bool training,
                              const Tensor& grad_input, const Tensor& grad_weight,
                              const Tensor& grad_bias) {
  cuda::DeviceGuard guard(x.device().index);
  // The input gradient's per-channel coefficients, from the caching allocator.
  const Tensor coefficients = empty({3, g.c}, mean.options());
  const int64_t n = x.numel();
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "batch_norm backward", [&] {
    using P = bn_param_t<scalar_t>;
    BnChannels<P> ch;
    ch.mean = mean.data_ptr<P>(), ch.invstd = invstd.data_ptr<P>();
    ch.weight = ptr_or_null<P>(weight), ch.bias = ptr_or_null<P>(bias);
    P* kp = coefficients.data_ptr<P>();
    const BnGradCoefficients<P> k{kp, kp + g.c, kp + 2 * g.c};
    const scalar_t *xd = x.data_ptr<scalar_t>(), *dyd = dy.data_ptr<scalar_t>();
    const GradTerm<scalar_t, P> term{xd, dyd, ch, relu};
    const GradFinish<P> finish{ch, k, g.count(), ptr_or_null<P>(grad_weight),
                               ptr_or_null<P>(grad_bias)};
    channel_reduce(layout(g), term, finish, x.device().index, stream_of(x));
    if (!grad_input.defined()) return;
    scalar_t* dxd = grad_input.data_ptr<scalar_t>();
    if (vectorisable<scalar_t>(g, {xd, dyd, dxd}) && fits_int32(n)) {
      const int32_t vectors = static_cast<int32_t>(n / Pack16<scalar_t>::kSize);
      with_channels_last(g.channels_last, [&](auto cl) {
        grad_input_vec_kernel<decltype(cl)::value>
            <<<blocks_for(vectors), kThreads, 0, stream_of(x)>>>(xd, dyd, ch, k, g, training, relu,
                                                                 dxd, vectors);
        LOOM_CUDA_KERNEL_CHECK();
      });
      return;
    }
    auto launch = [&](auto count) {
      grad_input_kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(xd, dyd, ch, k, g, training,
                                                                      relu, dxd, count);
      LOOM_CUDA_KERNEL_CHECK();
    };
    if (fits_int32(n)) {
      launch(static_cast<int32_t>(n));
    } else {
      launch(n);
    }
  });
}

}  // namespace loom::detail
