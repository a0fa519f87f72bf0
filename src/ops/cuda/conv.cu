// conv2d on cuDNN: forward, backward data and backward filter; the bias gradient is loom's own
// per-channel reduction (cuDNN's backward-bias kernel runs a few dozen blocks). Each pass's
// algorithm is chosen once per (shapes, dtype, geometry, determinism, tensor-op permission:
// TF32 or bfloat16, benchmark mode) from cuDNN's ranked heuristics or, in benchmark mode, by
// timing the candidates on the call's own buffers (cudnnFind*Ex's legacy algorithms, then the
// graph API's engines: conv_engines.h), allowing workspaces up to a limit, and cached with its
// math type or engine plan and workspace size; workspaces come from the caching allocator.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>

#include "loom/ops/conv.h"
#include "loom/ops/conv_backend.h"
#include "loom/ops/cuda/channel_reduce.cuh"
#include "loom/ops/cuda/channels_last.cuh"
#include "loom/ops/cuda/conv_engines.h"
#include "loom/ops/cuda/cudnn_handle.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

using AlgoKey = std::array<int64_t, 26>;

// A legacy algorithm with its math type, or (benchmark mode) a graph-API engine plan.
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  std::shared_ptr<const ConvEnginePlan> engine;
  size_t workspace = 0;
  float ms = -1;  // what a timed search measured
};

constexpr size_t kMaxWorkspace = size_t(1) << 30;

// The most workspace an algorithm may ask for: 1 GiB, or half the device's free memory when
// that is less (the caching allocator may still hold much more in reusable blocks).
size_t workspace_limit(int device) {
  size_t free_bytes = 0, total_bytes = 0;
  LOOM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  (void)device;  // cudaMemGetInfo reports the current device, set by the caller's DeviceGuard
  return std::min(kMaxWorkspace, free_bytes / 2);
}

std::atomic<int64_t> g_searches{0};
std::atomic<int64_t> g_engine_choices{0};

// LOOM_CONV_SEARCH_LOG=1 prints each timed search's outcome to stderr (which engine or
// algorithm won, in how many milliseconds): how the benchmarks find what a shape runs on.
bool search_log() {
  static const bool on = std::getenv("LOOM_CONV_SEARCH_LOG") != nullptr;
  return on;
}

// One cache and lock per device: ranks driving different GPUs from threads of one process
// never wait for each other's searches (key[2] is the device).
constexpr int kMaxDevices = 64;
struct AlgoCache {
  std::mutex mutex;
  std::map<AlgoKey, AlgoChoice> choices;
};

// The cached choice for `key`, or the result of `search` (run once, under the device's lock).
// A search made while a CUDA graph captures is not cached: it used the heuristics (a timed search
// runs kernels, which a capture would record), and eager calls of that shape still time theirs.
template <typename Search>
AlgoChoice cached_algorithm(const AlgoKey& key, Search search) {
  static AlgoCache caches[kMaxDevices];
  LOOM_ASSERT(key[2] >= 0 && key[2] < kMaxDevices, "device ", key[2], " outside the algorithm caches");
  AlgoCache& cache = caches[key[2]];
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.choices.find(key);
  if (it != cache.choices.end()) return it->second;
  const AlgoChoice choice = search();
  ++g_searches;
  if (!cuda::capturing(static_cast<int>(key[2]))) cache.choices.emplace(key, choice);
  return choice;
}

bool is_tensor_op(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The best-ranked heuristic result that is supported, deterministic when asked, within the
// workspace limit, and (unless tensor ops are allowed: TF32, bfloat16) not a tensor-op
// algorithm. The second round only guards against heuristics that label every result with a
// tensor-op math type or want more workspace than the limit: the descriptor's math type set
// from tensor_ops then governs execution.
template <typename Perf>
AlgoChoice pick(const Perf* results, int count, const char* pass, bool tensor_ops, size_t limit) {
  const bool need_deterministic = deterministic();
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < count; ++i) {
      const Perf& r = results[i];
      if (r.status != CUDNN_STATUS_SUCCESS) continue;
      if (need_deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
      if (round == 0 && ((!tensor_ops && is_tensor_op(r.mathType)) || r.memory > limit)) continue;
      AlgoChoice c;
      c.algo = static_cast<int>(r.algo);
      c.ms = r.time;
      // Conversion math could run float32 data in fp16 (and bfloat16 data through fp16): plain
      // tensor-op math is as far as it goes.
      c.math = !tensor_ops ? CUDNN_FMA_MATH
               : r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? CUDNN_TENSOR_OP_MATH
                                                                      : r.mathType;
      return c;
    }
  }
  LOOM_FAIL("conv2d: cuDNN offers no usable ", pass, " algorithm",
            need_deterministic ? " that is deterministic" : "", " for this shape");
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

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

// Descriptors and cache key of one call, for the symmetric geometry s.
struct CudnnConv {
  DType dtype;
  int device;
  cudnnHandle_t handle;
  cuda::TensorDescriptor x, y;
  cuda::FilterDescriptor w;
  cuda::ConvolutionDescriptor conv;
  ConvGeometry s;
  // Whether tensor-core algorithms may run: TF32 for float32 data when allowed, and always for
  // bfloat16 (which tensor cores multiply exactly, accumulating in float32).
  bool tensor_ops;

  CudnnConv(const ConvGeometry& geo, DType dt, int dev)
      : dtype(dt), device(dev), handle(cuda::cudnn_handle(dev)), x(dt, geo.n, geo.c, geo.h, geo.w, geo.channels_last),
        y(dt, geo.n, geo.o, geo.oh, geo.ow, geo.channels_last), w(dt, geo.o, geo.c, geo.kh, geo.kw, geo.channels_last),
        conv(dt, geo.pad_top, geo.pad_left, geo.stride_h, geo.stride_w, geo.dil_h, geo.dil_w), s(geo),
        tensor_ops(dt == kBFloat16 || (dt == kFloat32 && conv_allow_tf32())) {
    int n = 0, c = 0, h = 0, wd = 0;
    LOOM_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd));
    LOOM_ASSERT(n == geo.n && c == geo.o && h == geo.oh && wd == geo.ow, "cuDNN output ", h, "x", wd,
                " differs from loom's ", geo.oh, "x", geo.ow);
  }

  // In benchmark mode an engine plan may be chosen: it belongs to this thread's handle and
  // assumes its operands' alignment, so both are part of the key, with the search's limit.
  AlgoKey key(ConvPass pass, const ConvOperands& o) const {
    const bool bench = conv_benchmark();
    return {static_cast<int64_t>(pass), static_cast<int64_t>(dtype), device, deterministic() ? 1 : 0,
            s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.pad_top, s.pad_left, s.stride_h, s.stride_w,
            s.dil_h, s.dil_w, tensor_ops ? 1 : 0, bench ? 1 : 0, s.channels_last ? 1 : 0,
            bench ? static_cast<int64_t>(reinterpret_cast<intptr_t>(handle)) : 0,
            bench ? operand_alignment(o.x) : 0, bench ? operand_alignment(o.w) : 0,
            bench ? operand_alignment(o.y) : 0, bench && conv_search_engines_only() ? 1 : 0,
            bench ? conv_benchmark_limit() : 0};
  }

  // Whether this pass's search times the candidates: benchmark mode, and not inside a capture.
  bool timed_search() const { return conv_benchmark() && !cuda::capturing(device); }
  // Scratch for a timed search, and its size: the limit the heuristics allow, so that no
  // algorithm they could choose goes untimed (with 512 MiB, resnet18's batch-256 layers lost
  // their fastest algorithms and a step took 65 ms instead of 43).
  std::pair<Tensor, size_t> search_workspace() const {
    const size_t bytes = workspace_limit(device);
    return {workspace(bytes), bytes};
  }

  // The math type the heuristics see: tensor-op math lets them offer TF32 algorithms.
  void prepare_search() const {
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  }

  // Sets the descriptor to the math type `choice` runs with (before its workspace query and
  // before every call that uses it).
  void use(const AlgoChoice& choice) const {
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), choice.math));
  }

  Tensor workspace(size_t bytes) const {
    return bytes ? empty({static_cast<int64_t>(bytes)}, TensorOptions(kUInt8).device(cuda_device(device)))
                 : Tensor();
  }

  // A timed search also times the graph API's engines and keeps whichever of them and the
  // legacy choice ran faster (float64 has no tensor-core engines to gain: legacy only).
  template <typename Legacy>
  AlgoChoice with_engines(ConvPass pass, const ConvOperands& o, Legacy legacy) const {
    if (!timed_search() || dtype == kFloat64) return legacy();
    const bool engines_only = conv_search_engines_only();
    AlgoChoice best = engines_only ? AlgoChoice{} : legacy();
    const ConvProblem problem{pass, dtype, s, tensor_ops, deterministic()};
    const TimedEngine e =
        fastest_conv_engine(handle, device, problem, o, workspace_limit(device), conv_benchmark_limit());
    const bool engine_wins = e.plan && (engines_only || e.ms < best.ms);
    if (search_log()) {
      std::fprintf(stderr, "loom conv search: %s: engine %lld %.4f ms (%d timed), legacy algo %d %.4f ms -> %s\n",
                   describe(problem).c_str(), e.plan ? static_cast<long long>(e.plan->engine()) : -1LL, e.ms,
                   e.timed, best.algo, best.ms, engine_wins ? "engine" : "legacy");
    }
    if (engine_wins) {
      best = AlgoChoice{};
      best.engine = e.plan;
      best.workspace = e.plan->workspace();
      best.ms = e.ms;
      ++g_engine_choices;
    } else if (engines_only) {
      best = legacy();
    }
    return best;
  }

  // The buffers are the call's own: a timed search writes its output (which the call then
  // overwrites) and reads its inputs.
  AlgoChoice forward_algorithm(const ConvOperands& o) const {
    return cached_algorithm(key(ConvPass::Forward, o), [&] {
      return with_engines(ConvPass::Forward, o, [&] {
        const void *xd = o.x, *wd = o.w;
        void* yd = o.y;
        cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int count = 0;
        prepare_search();
        size_t limit = workspace_limit(device);
        if (timed_search()) {
          const auto [ws, bytes] = search_workspace();
          limit = bytes;
          LOOM_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
              handle, x.get(), xd, w.get(), wd, conv.get(), y.get(), yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
              results, data_or_null(ws), bytes));
        } else {
          LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
              handle, x.get(), w.get(), conv.get(), y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results));
        }
        AlgoChoice c = pick(results, count, "forward", tensor_ops, limit);
        use(c);
        LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            handle, x.get(), w.get(), conv.get(), y.get(), static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
            &c.workspace));
        return c;
      });
    });
  }

  AlgoChoice backward_data_algorithm(const ConvOperands& o) const {
    return cached_algorithm(key(ConvPass::BackwardData, o), [&] {
      return with_engines(ConvPass::BackwardData, o, [&] {
        const void *wd = o.w, *dyd = o.y;
        void* dxd = o.x;
        cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int count = 0;
        prepare_search();
        size_t limit = workspace_limit(device);
        if (timed_search()) {
          const auto [ws, bytes] = search_workspace();
          limit = bytes;
          LOOM_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
              handle, w.get(), wd, y.get(), dyd, conv.get(), x.get(), dxd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
              &count, results, data_or_null(ws), bytes));
        } else {
          LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              handle, w.get(), y.get(), conv.get(), x.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count,
              results));
        }
        AlgoChoice c = pick(results, count, "backward-data", tensor_ops, limit);
        use(c);
        LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle, w.get(), y.get(), conv.get(), x.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
            &c.workspace));
        return c;
      });
    });
  }

  AlgoChoice backward_filter_algorithm(const ConvOperands& o) const {
    return cached_algorithm(key(ConvPass::BackwardFilter, o), [&] {
      return with_engines(ConvPass::BackwardFilter, o, [&] {
        const void *xd = o.x, *dyd = o.y;
        void* dwd = o.w;
        cudnnConvolutionBwdFilterAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int count = 0;
        prepare_search();
        size_t limit = workspace_limit(device);
        if (timed_search()) {
          const auto [ws, bytes] = search_workspace();
          limit = bytes;
          LOOM_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
              handle, x.get(), xd, y.get(), dyd, conv.get(), w.get(), dwd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
              &count, results, data_or_null(ws), bytes));
        } else {
          LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              handle, x.get(), y.get(), conv.get(), w.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count,
              results));
        }
        AlgoChoice c = pick(results, count, "backward-filter", tensor_ops, limit);
        use(c);
        LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle, x.get(), y.get(), conv.get(), w.get(),
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), &c.workspace));
        return c;
      });
    });
  }
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
    channel_reduce(ChannelLayout{g.n, g.o, g.oh * g.ow, g.channels_last}, SumTerm<scalar_t>{dy.data_ptr<scalar_t>()},
                   StoreSum<scalar_t>{out.data_ptr<scalar_t>()}, device, cuda::current_stream(device));
  });
  return out;
}

// y[n, o, :, :] = act(y + bias[o]) in place, `Vec` elements a thread (4 for float data whose
// runs of one channel, NCHW planes, or whose channel rows, NHWC, are a multiple of 4 long: one
// 16-byte load and store). cudnnAddTensor took 136 us for the 126 MB of classic_cnn's first
// layer at batch 256, over twice what moving them costs.
template <typename T, int Vec, bool kChannelsLast>
__global__ void bias_relu_kernel(T* y, const T* bias, int64_t vectors, int64_t plane, int64_t channels,
                                 bool relu) {
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
    const int blocks = static_cast<int>(std::min<int64_t>((vectors + threads - 1) / threads, 65536));
    auto launch = [&](auto vec, auto channels_last) {
      bias_relu_kernel<T, decltype(vec)::value, decltype(channels_last)::value>
          <<<blocks, threads, 0, stream>>>(y.data_ptr<T>(), b, vectors, plane, g.o, relu);
      LOOM_CUDA_KERNEL_CHECK();
    };
    auto launch_layout = [&](auto vec) { with_channels_last(g.channels_last, [&](auto cl) { launch(vec, cl); }); };
    if (vec4) {
      launch_layout(std::integral_constant<int, std::is_same<T, float>::value ? 4 : 1>{});  // vec4: float
    } else {
      launch_layout(std::integral_constant<int, 1>{});
    }
  });
}

}  // namespace

int64_t cuda_conv_algorithm_searches() { return g_searches; }
int64_t cuda_conv_engine_choices() { return g_engine_choices; }

std::string cuda_library_versions() {
  int runtime = 0;
  LOOM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const size_t dnn = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return detail::concat("CUDA runtime ", runtime / 1000, ".", runtime % 1000 / 10, ", cuDNN ", dnn / 10000, ".",
                        dnn % 10000 / 100, ".", dnn % 100);
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
  const AlgoChoice algo = c.forward_algorithm(operands);
  const Tensor ws = c.workspace(algo.workspace);
  if (algo.engine) {
    algo.engine->run(c.handle, operands, data_or_null(ws));
  } else {
    c.use(algo);
    LOOM_CUDNN_CHECK(cudnnConvolutionForward(
        c.handle, cuda::cudnn_one(c.dtype), c.x.get(), xs.raw_data(), c.w.get(), weight.raw_data(),
        c.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), data_or_null(ws), algo.workspace,
        cuda::cudnn_zero(c.dtype), c.y.get(), y.raw_data()));
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
    const AlgoChoice algo = c.backward_filter_algorithm(operands);
    const Tensor ws = c.workspace(algo.workspace);
    if (algo.engine) {
      algo.engine->run(c.handle, operands, data_or_null(ws));
    } else {
      c.use(algo);
      LOOM_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          c.handle, one, c.x.get(), xs.raw_data(), c.y.get(), grad_out.raw_data(), c.conv.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), data_or_null(ws), algo.workspace, zero,
          c.w.get(), grads.weight.raw_data()));
    }
  }
  if (need_input) {
    Tensor dxs = empty({s.n, s.c, s.h, s.w}, x.options(), format_of(g));
    const ConvOperands operands{dxs.raw_data(), weight.raw_data(), grad_out.raw_data()};
    const AlgoChoice algo = c.backward_data_algorithm(operands);
    const Tensor ws = c.workspace(algo.workspace);
    if (algo.engine) {
      algo.engine->run(c.handle, operands, data_or_null(ws));
    } else {
      c.use(algo);
      LOOM_CUDNN_CHECK(cudnnConvolutionBackwardData(
          c.handle, one, c.w.get(), weight.raw_data(), c.y.get(), grad_out.raw_data(), c.conv.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), data_or_null(ws), algo.workspace, zero,
          c.x.get(), dxs.raw_data()));
    }
    grads.input = extra ? dxs.narrow(2, g.pad_top - s.pad_top, g.h)
                              .narrow(3, g.pad_left - s.pad_left, g.w)
                              .contiguous(format_of(g))
                        : dxs;
  }
  return grads;
}

}  // namespace loom::detail
