// The algorithm search of conv_search.h. The three passes differ only in cuDNN's functions and
// types (LegacyPass) and in which operand they write; the rules for choosing are written once.
#include "loom/ops/cuda/conv_search.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "loom/ops/conv.h"
#include "loom/ops/cuda/cudnn_handle.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/graph.h"

namespace loom::detail {

namespace {

using AlgoKey = std::array<int64_t, 26>;

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
std::atomic<int64_t> g_search_ns{0};  // wall time inside the searches (benchmark mode: the timing)
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
  LOOM_ASSERT(key[2] >= 0 && key[2] < kMaxDevices, "device ", key[2],
              " outside the algorithm caches");
  AlgoCache& cache = caches[key[2]];
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.choices.find(key);
  if (it != cache.choices.end()) return it->second;
  const auto start = std::chrono::steady_clock::now();
  const AlgoChoice choice = search();
  g_search_ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  ++g_searches;
  if (!cuda::capturing(static_cast<int>(key[2]))) cache.choices.emplace(key, choice);
  return choice;
}

// In benchmark mode an engine plan may be chosen: it belongs to this thread's handle and
// assumes its operands' alignment, so both are part of the key, with the search's limit.
AlgoKey cache_key(const ConvCall& c, ConvPass pass, const ConvOperands& o) {
  const bool bench = conv_benchmark();
  const ConvGeometry& s = c.s;
  return {static_cast<int64_t>(pass),
          static_cast<int64_t>(c.dtype),
          c.device,
          deterministic() ? 1 : 0,
          s.n,
          s.c,
          s.h,
          s.w,
          s.o,
          s.kh,
          s.kw,
          s.pad_top,
          s.pad_left,
          s.stride_h,
          s.stride_w,
          s.dil_h,
          s.dil_w,
          c.tensor_ops ? 1 : 0,
          bench ? 1 : 0,
          s.channels_last ? 1 : 0,
          bench ? static_cast<int64_t>(reinterpret_cast<intptr_t>(c.handle)) : 0,
          bench ? operand_alignment(o.x) : 0,
          bench ? operand_alignment(o.w) : 0,
          bench ? operand_alignment(o.y) : 0,
          bench && conv_search_engines_only() ? 1 : 0,
          bench ? conv_benchmark_limit() : 0};
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
      c.math = !tensor_ops                                           ? CUDNN_FMA_MATH
               : r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? CUDNN_TENSOR_OP_MATH
                                                                     : r.mathType;
      return c;
    }
  }
  LOOM_FAIL("conv2d: cuDNN offers no usable ", pass, " algorithm",
            need_deterministic ? " that is deterministic" : "", " for this shape");
}

// What the legacy API names differently for each pass. Each pass reads two of the operands and
// writes the third (Find*Ex runs the pass): forward x, w -> y; backward data w, y -> x; backward
// filter x, y -> w. cuDNN takes the descriptors in that order too.
template <ConvPass P>
struct LegacyPass;

template <>
struct LegacyPass<ConvPass::Forward> {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static constexpr const char* kName = "forward";
  static void heuristics(const ConvCall& c, Perf* results, int* count) {
    LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x, c.w, c.conv, c.y, kCount,
                                                            count, results));
  }
  static void find(const ConvCall& c, const ConvOperands& o, Perf* results, int* count, void* ws,
                   size_t bytes) {
    LOOM_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        c.handle, c.x, o.x, c.w, o.w, c.conv, c.y, o.y, kCount, count, results, ws, bytes));
  }
  static void workspace_size(const ConvCall& c, Algo algo, size_t* bytes) {
    LOOM_CUDNN_CHECK(
        cudnnGetConvolutionForwardWorkspaceSize(c.handle, c.x, c.w, c.conv, c.y, algo, bytes));
  }
};

template <>
struct LegacyPass<ConvPass::BackwardData> {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static constexpr const char* kName = "backward-data";
  static void heuristics(const ConvCall& c, Perf* results, int* count) {
    LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(c.handle, c.w, c.y, c.conv, c.x,
                                                                 kCount, count, results));
  }
  static void find(const ConvCall& c, const ConvOperands& o, Perf* results, int* count, void* ws,
                   size_t bytes) {
    LOOM_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
        c.handle, c.w, o.w, c.y, o.y, c.conv, c.x, o.x, kCount, count, results, ws, bytes));
  }
  static void workspace_size(const ConvCall& c, Algo algo, size_t* bytes) {
    LOOM_CUDNN_CHECK(
        cudnnGetConvolutionBackwardDataWorkspaceSize(c.handle, c.w, c.y, c.conv, c.x, algo, bytes));
  }
};

template <>
struct LegacyPass<ConvPass::BackwardFilter> {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static constexpr const char* kName = "backward-filter";
  static void heuristics(const ConvCall& c, Perf* results, int* count) {
    LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.handle, c.x, c.y, c.conv, c.w,
                                                                   kCount, count, results));
  }
  static void find(const ConvCall& c, const ConvOperands& o, Perf* results, int* count, void* ws,
                   size_t bytes) {
    LOOM_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
        c.handle, c.x, o.x, c.y, o.y, c.conv, c.w, o.w, kCount, count, results, ws, bytes));
  }
  static void workspace_size(const ConvCall& c, Algo algo, size_t* bytes) {
    LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(c.handle, c.x, c.y, c.conv, c.w,
                                                                    algo, bytes));
  }
};

// Whether this pass's search times the candidates: benchmark mode, and not inside a capture.
bool timed_search(const ConvCall& c) { return conv_benchmark() && !cuda::capturing(c.device); }

// The legacy algorithm for pass P: cuDNN's heuristics, or the candidates timed by Find*Ex with
// scratch of the limit the heuristics allow, so that no algorithm they could choose goes
// untimed (with 512 MiB, resnet18's batch-256 layers lost their fastest algorithms and a step
// took 65 ms instead of 43). The heuristics see tensor-op math when tensor ops are allowed, so
// that they offer TF32 algorithms; the workspace is queried under the choice's own math type.
template <ConvPass P>
AlgoChoice legacy_algorithm(const ConvCall& c, const ConvOperands& o) {
  using Pass = LegacyPass<P>;
  typename Pass::Perf results[Pass::kCount];
  int count = 0;
  LOOM_CUDNN_CHECK(
      cudnnSetConvolutionMathType(c.conv, c.tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  size_t limit = workspace_limit(c.device);
  if (timed_search(c)) {
    const size_t bytes = workspace_limit(c.device);
    const Tensor ws = conv_workspace(bytes, c.device);
    limit = bytes;
    Pass::find(c, o, results, &count, data_or_null(ws), bytes);
  } else {
    Pass::heuristics(c, results, &count);
  }
  AlgoChoice choice = pick(results, count, Pass::kName, c.tensor_ops, limit);
  LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv, choice.math));
  Pass::workspace_size(c, static_cast<typename Pass::Algo>(choice.algo), &choice.workspace);
  return choice;
}

AlgoChoice legacy_algorithm(ConvPass pass, const ConvCall& c, const ConvOperands& o) {
  switch (pass) {
    case ConvPass::Forward:
      return legacy_algorithm<ConvPass::Forward>(c, o);
    case ConvPass::BackwardData:
      return legacy_algorithm<ConvPass::BackwardData>(c, o);
    case ConvPass::BackwardFilter:
      return legacy_algorithm<ConvPass::BackwardFilter>(c, o);
  }
  LOOM_FAIL("conv2d: unknown pass ", static_cast<int64_t>(pass));
}

// A timed search also times the graph API's engines and keeps whichever of them and the
// legacy choice ran faster (float64 has no tensor-core engines to gain: legacy only).
AlgoChoice with_engines(const ConvCall& c, ConvPass pass, const ConvOperands& o) {
  const auto legacy = [&] { return legacy_algorithm(pass, c, o); };
  if (!timed_search(c) || c.dtype == kFloat64) return legacy();
  const bool engines_only = conv_search_engines_only();
  AlgoChoice best = engines_only ? AlgoChoice{} : legacy();
  const ConvProblem problem{pass, c.dtype, c.s, c.tensor_ops, deterministic()};
  const TimedEngine e = fastest_conv_engine(c.handle, c.device, problem, o,
                                            workspace_limit(c.device), conv_benchmark_limit());
  const bool engine_wins = e.plan && (engines_only || e.ms < best.ms);
  if (search_log()) {
    std::fprintf(stderr,
                 "loom conv search: %s: engine %lld %.4f ms (%d timed), "
                 "legacy algo %d %.4f ms -> %s\n",
                 describe(problem).c_str(),
                 e.plan ? static_cast<long long>(e.plan->engine()) : -1LL, e.ms, e.timed, best.algo,
                 best.ms, engine_wins ? "engine" : "legacy");
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

}  // namespace

AlgoChoice conv_algorithm(ConvPass pass, const ConvCall& call, const ConvOperands& operands) {
  return cached_algorithm(cache_key(call, pass, operands),
                          [&] { return with_engines(call, pass, operands); });
}

Tensor conv_workspace(size_t bytes, int device) {
  return bytes ? empty({static_cast<int64_t>(bytes)},
                       TensorOptions(kUInt8).device(cuda_device(device)))
               : Tensor();
}

int64_t cuda_conv_algorithm_searches() { return g_searches; }
double cuda_conv_algorithm_search_seconds() { return static_cast<double>(g_search_ns) * 1e-9; }
int64_t cuda_conv_engine_choices() { return g_engine_choices; }

}  // namespace loom::detail
