// conv2d on cuDNN: forward, backward data, backward filter and bias. Each pass's algorithm is
// chosen once per (shapes, dtype, geometry, determinism) from cuDNN's heuristics and cached
// with its workspace size; workspaces come from the caching allocator.
#include <array>
#include <atomic>
#include <map>
#include <mutex>

#include "ops/conv.h"
#include "ops/conv_kernels.h"
#include "ops/cuda/cudnn_handle.h"
#include "tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

enum class Pass : int64_t { Forward, BackwardData, BackwardFilter };

using AlgoKey = std::array<int64_t, 18>;

struct AlgoChoice {
  int algo = 0;
  size_t workspace = 0;
};

std::atomic<int64_t> g_searches{0};

// The cached choice for `key`, or the result of `search` (run once, under the lock).
template <typename Search>
AlgoChoice cached_algorithm(const AlgoKey& key, Search search) {
  static std::mutex mutex;
  static std::map<AlgoKey, AlgoChoice> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const AlgoChoice choice = search();
  ++g_searches;
  cache.emplace(key, choice);
  return choice;
}

// The fastest heuristic result that ran, is deterministic when asked, and uses no tensor-op
// (TF32) math, which would cost float32 accuracy.
template <typename Perf>
int pick(const Perf* results, int count, const char* pass) {
  const bool need_deterministic = deterministic();
  // The descriptor's FMA math governs execution; the second round only guards against
  // heuristics that label every result with a tensor-op math type.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < count; ++i) {
      const Perf& r = results[i];
      if (r.status != CUDNN_STATUS_SUCCESS) continue;
      if (need_deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
      const bool tensor_op = r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      if (round == 0 && tensor_op) continue;
      return static_cast<int>(r.algo);
    }
  }
  LOOM_FAIL("conv2d: cuDNN offers no usable ", pass, " algorithm",
            need_deterministic ? " that is deterministic" : "", " for this shape");
}

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

Tensor pad_extra(const Tensor& x, const ConvGeometry& g, const ConvGeometry& s) {
  Tensor padded = zeros({s.n, s.c, s.h, s.w}, x.options());
  padded.narrow(2, g.pad_top - s.pad_top, g.h).narrow(3, g.pad_left - s.pad_left, g.w).copy_(x);
  return padded;
}

// Descriptors and cache key of one call, for the symmetric geometry s.
struct CudnnConv {
  DType dtype;
  int device;
  cudnnHandle_t handle;
  cuda::TensorDescriptor x, y;
  cuda::FilterDescriptor w;
  cuda::ConvolutionDescriptor conv;
  ConvGeometry s;

  CudnnConv(const ConvGeometry& geo, DType dt, int dev)
      : dtype(dt), device(dev), handle(cuda::cudnn_handle(dev)), x(dt, geo.n, geo.c, geo.h, geo.w),
        y(dt, geo.n, geo.o, geo.oh, geo.ow), w(dt, geo.o, geo.c, geo.kh, geo.kw),
        conv(dt, geo.pad_top, geo.pad_left, geo.stride_h, geo.stride_w, geo.dil_h, geo.dil_w), s(geo) {
    int n = 0, c = 0, h = 0, wd = 0;
    LOOM_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd));
    LOOM_ASSERT(n == geo.n && c == geo.o && h == geo.oh && wd == geo.ow, "cuDNN output ", h, "x", wd,
                " differs from loom's ", geo.oh, "x", geo.ow);
  }

  AlgoKey key(Pass pass) const {
    return {static_cast<int64_t>(pass), static_cast<int64_t>(dtype), device, deterministic() ? 1 : 0,
            s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.pad_top, s.pad_left, s.stride_h, s.stride_w,
            s.dil_h, s.dil_w, 0};
  }

  Tensor workspace(size_t bytes) const {
    return bytes ? empty({static_cast<int64_t>(bytes)}, TensorOptions(kUInt8).device(cuda_device(device)))
                 : Tensor();
  }

  AlgoChoice forward_algorithm() const {
    return cached_algorithm(key(Pass::Forward), [&] {
      cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int count = 0;
      LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          handle, x.get(), w.get(), conv.get(), y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results));
      AlgoChoice c;
      c.algo = pick(results, count, "forward");
      LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
          handle, x.get(), w.get(), conv.get(), y.get(), static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
          &c.workspace));
      return c;
    });
  }

  AlgoChoice backward_data_algorithm() const {
    return cached_algorithm(key(Pass::BackwardData), [&] {
      cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int count = 0;
      LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, w.get(), y.get(), conv.get(), x.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count,
          results));
      AlgoChoice c;
      c.algo = pick(results, count, "backward-data");
      LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, w.get(), y.get(), conv.get(), x.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
          &c.workspace));
      return c;
    });
  }

  AlgoChoice backward_filter_algorithm() const {
    return cached_algorithm(key(Pass::BackwardFilter), [&] {
      cudnnConvolutionBwdFilterAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int count = 0;
      LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, x.get(), y.get(), conv.get(), w.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count,
          results));
      AlgoChoice c;
      c.algo = pick(results, count, "backward-filter");
      LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, x.get(), y.get(), conv.get(), w.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), &c.workspace));
      return c;
    });
  }
};

void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

}  // namespace

int64_t cuda_conv_algorithm_searches() { return g_searches; }

Tensor cuda_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const ConvGeometry& g) {
  const int device = x.device().index;
  cuda::DeviceGuard guard(device);
  const ConvGeometry s = symmetric(g);
  const Tensor xs = needs_extra_padding(g) ? pad_extra(x, g, s) : x;
  Tensor y = empty({g.n, g.o, g.oh, g.ow}, x.options());
  const CudnnConv c(s, x.dtype(), device);
  const AlgoChoice algo = c.forward_algorithm();
  const Tensor ws = c.workspace(algo.workspace);
  LOOM_CUDNN_CHECK(cudnnConvolutionForward(
      c.handle, cuda::cudnn_one(c.dtype), c.x.get(), xs.raw_data(), c.w.get(), weight.raw_data(),
      c.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), data_or_null(ws), algo.workspace,
      cuda::cudnn_zero(c.dtype), c.y.get(), y.raw_data()));
  if (bias.defined()) {
    const cuda::TensorDescriptor b(x.dtype(), 1, g.o, 1, 1);
    LOOM_CUDNN_CHECK(cudnnAddTensor(c.handle, cuda::cudnn_one(c.dtype), b.get(), bias.raw_data(),
                                    cuda::cudnn_one(c.dtype), c.y.get(), y.raw_data()));
  }
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
  if (need_bias) {
    grads.bias = empty({g.o}, x.options());
    const cuda::TensorDescriptor b(x.dtype(), 1, g.o, 1, 1);
    LOOM_CUDNN_CHECK(cudnnConvolutionBackwardBias(c.handle, one, c.y.get(), grad_out.raw_data(), zero,
                                                  b.get(), grads.bias.raw_data()));
  }
  if (need_weight) {
    grads.weight = empty(weight.shape(), weight.options());
    const Tensor xs = extra ? pad_extra(x, g, s) : x;
    const AlgoChoice algo = c.backward_filter_algorithm();
    const Tensor ws = c.workspace(algo.workspace);
    LOOM_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        c.handle, one, c.x.get(), xs.raw_data(), c.y.get(), grad_out.raw_data(), c.conv.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), data_or_null(ws), algo.workspace, zero,
        c.w.get(), grads.weight.raw_data()));
  }
  if (need_input) {
    Tensor dxs = empty({s.n, s.c, s.h, s.w}, x.options());
    const AlgoChoice algo = c.backward_data_algorithm();
    const Tensor ws = c.workspace(algo.workspace);
    LOOM_CUDNN_CHECK(cudnnConvolutionBackwardData(
        c.handle, one, c.w.get(), weight.raw_data(), c.y.get(), grad_out.raw_data(), c.conv.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), data_or_null(ws), algo.workspace, zero,
        c.x.get(), dxs.raw_data()));
    grads.input = extra ? dxs.narrow(2, g.pad_top - s.pad_top, g.h).narrow(3, g.pad_left - s.pad_left, g.w).contiguous()
                        : dxs;
  }
  return grads;
}

}  // namespace loom::detail
