// The graph-API engine search of conv_engines.h: a one-operation graph per pass, candidate
// configurations from heuristics and the fallback list, plans timed with CUDA events.
#include "loom/ops/cuda/conv_engines.h"

#include <algorithm>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

namespace {

using cuda::BackendDescriptor;

// The variant pack's names for the three tensors.
constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';

constexpr int kTimedRuns = 3;

// [n, c, h, w] strides, of an NCHW tensor or, channels_last, of one stored NHWC (the weight
// [o, c, kh, kw] then stored [o, kh, kw, c]).
std::vector<int64_t> strides_of(const std::vector<int64_t>& d, bool channels_last) {
  if (channels_last) return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

BackendDescriptor tensor(int64_t uid, DType dtype, const std::vector<int64_t>& dims,
                         bool channels_last, int64_t alignment) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = cuda::cudnn_dtype(dtype);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type)
      .set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .set_int64(CUDNN_ATTR_TENSOR_STRIDES, strides_of(dims, channels_last))
      .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, {uid})
      .set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, {alignment});
  t.finalize();
  return t;
}

// Cross-correlation accumulating in float32, for float32 and bfloat16 data alike.
BackendDescriptor convolution(const ConvGeometry& g) {
  BackendDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, {2})
      .set_int64(CUDNN_ATTR_CONVOLUTION_DILATIONS, {g.dil_h, g.dil_w})
      .set_int64(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {g.stride_h, g.stride_w})
      .set_int64(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {g.pad_top, g.pad_left})
      .set_int64(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {g.pad_bottom, g.pad_right});
  conv.finalize();
  return conv;
}

// The pass as a graph of one operation over the x, w and y tensors (y = conv(x, w); backward
// data writes x from y and w; backward filter writes w from x and y).
BackendDescriptor operation_graph(cudnnHandle_t handle, const ConvProblem& p,
                                  const int64_t alignment[3]) {
  const ConvGeometry& g = p.geometry;
  const bool cl = g.channels_last;
  const BackendDescriptor x = tensor(kUidX, p.dtype, {g.n, g.c, g.h, g.w}, cl, alignment[0]);
  const BackendDescriptor w = tensor(kUidW, p.dtype, {g.o, g.c, g.kh, g.kw}, cl, alignment[1]);
  const BackendDescriptor y = tensor(kUidY, p.dtype, {g.n, g.o, g.oh, g.ow}, cl, alignment[2]);
  const BackendDescriptor conv = convolution(g);
  const float alpha = 1.0f, beta = 0.0f;
  cudnnBackendDescriptorType_t type = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
  // Attribute names in the order x, w, y, convolution, alpha, beta.
  std::vector<cudnnBackendAttributeName_t> names = {
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  if (p.pass == ConvPass::BackwardData) {
    type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
    names = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  } else if (p.pass == ConvPass::BackwardFilter) {
    type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
    names = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  }
  BackendDescriptor op(type);
  op.set_descriptor(names[0], x).set_descriptor(names[1], w).set_descriptor(names[2], y);
  op.set_descriptor(names[3], conv);
  op.set(names[4], CUDNN_TYPE_FLOAT, 1, &alpha).set(names[5], CUDNN_TYPE_FLOAT, 1, &beta);
  op.finalize();

  BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set_descriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  graph.finalize();
  return graph;
}

// The engine configurations one heuristics mode offers, best-ranked first; none when the mode
// does not support the graph.
std::vector<BackendDescriptor> configurations(const BackendDescriptor& graph,
                                              cudnnBackendHeurMode_t mode) {
  BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (heuristics.try_finalize() != CUDNN_STATUS_SUCCESS) return {};
  const int64_t count =
      heuristics.count(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR);
  return cuda::get_descriptors(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count);
}

// Whether a configuration's engine keeps loom's numerics (conv_engines.h); its global index
// into `engine`.
bool qualifies(const BackendDescriptor& config, const ConvProblem& p, int64_t* engine) {
  const std::vector<BackendDescriptor> engines = cuda::get_descriptors(
      config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1);
  if (engines.empty()) return false;
  *engine = engines[0].get_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  cudnnBackendNumericalNote_t notes[32];
  const int64_t n =
      engines[0].get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 32, notes);
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) {
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        return false;
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
        if (!p.tensor_ops) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
        if (p.deterministic) return false;
        break;
      default:
        break;
    }
  }
  cudnnBackendBehaviorNote_t behaviour[32];
  const int64_t b =
      engines[0].get(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 32, behaviour);
  for (int64_t i = 0; i < std::min<int64_t>(b, 32); ++i) {
    if (behaviour[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  }
  return true;
}

cudnnStatus_t execute(cudnnHandle_t handle, const BackendDescriptor& plan, const ConvOperands& o,
                      void* workspace) {
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  void* pointers[3] = {o.x, o.w, o.y};
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers)
      .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  return cudnnBackendExecute(handle, plan.get(), pack.get());
}

Tensor workspace_tensor(size_t bytes, int device) {
  return bytes ? empty({static_cast<int64_t>(bytes)},
                       TensorOptions(kUInt8).device(cuda_device(device)))
               : Tensor();
}

// The median of three timed runs of `run` after one untimed one, in milliseconds of the
// device's current stream (CUDA events); -1 when a run reports failure.
float median_run_ms(int device, const std::function<bool()>& run) {
  const cuda::StreamHandle stream = cuda::current_stream(device);
  cuda::Event start(device), end(device);
  if (!run()) return -1;  // the first run also loads the kernels' modules
  float times[kTimedRuns];
  for (float& t : times) {
    start.record(stream);
    const bool ran = run();
    end.record(stream);
    end.synchronize();
    if (!ran) return -1;
    t = cuda::Event::elapsed_ms(start, end);
  }
  std::sort(times, times + kTimedRuns);
  return times[kTimedRuns / 2];
}

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return "forward";
    case ConvPass::BackwardData:
      return "backward-data";
    case ConvPass::BackwardFilter:
      return "backward-filter";
  }
  return "?";
}

}  // namespace

int64_t operand_alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int64_t alignment = 16;
  while (alignment > 1 && address % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

ConvEnginePlan::ConvEnginePlan(BackendDescriptor plan, size_t workspace, int64_t engine,
                               const int64_t alignment[3])
    : plan_(std::move(plan)),
      workspace_(workspace),
      engine_(engine),
      alignment_{alignment[0], alignment[1], alignment[2]} {}

void ConvEnginePlan::run(cudnnHandle_t handle, const ConvOperands& o, void* workspace) const {
  LOOM_ASSERT(operand_alignment(o.x) >= alignment_[0] && operand_alignment(o.w) >= alignment_[1] &&
                  operand_alignment(o.y) >= alignment_[2],
              "conv2d: operands less aligned than the plan's search assumed");
  LOOM_CUDNN_CHECK(execute(handle, plan_, o, workspace));
}

TimedEngine fastest_conv_engine(cudnnHandle_t handle, int device, const ConvProblem& problem,
                                const ConvOperands& operands, size_t workspace_limit,
                                int64_t max_timed) {
  const int64_t alignment[3] = {operand_alignment(operands.x), operand_alignment(operands.w),
                                operand_alignment(operands.y)};
  const BackendDescriptor graph = operation_graph(handle, problem, alignment);
  std::vector<BackendDescriptor> candidates = configurations(graph, CUDNN_HEUR_MODE_A);
  const size_t ranked = candidates.size();
  for (BackendDescriptor& c : configurations(graph, CUDNN_HEUR_MODE_FALLBACK))
    candidates.push_back(std::move(c));

  std::set<int64_t> ranked_engines;
  TimedEngine best;
  for (size_t i = 0; i < candidates.size() && (max_timed == 0 || best.timed < max_timed); ++i) {
    int64_t engine = -1;
    if (!qualifies(candidates[i], problem, &engine)) continue;
    // The fallback list repeats engines the heuristics ranked: time each engine once.
    if (i < ranked) {
      ranked_engines.insert(engine);
    } else if (ranked_engines.count(engine) != 0) {
      continue;
    }
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, candidates[i]);
    if (plan.try_finalize() != CUDNN_STATUS_SUCCESS) continue;
    plan.keep_alive(graph);  // the configuration came from heuristics over it
    const auto bytes =
        static_cast<size_t>(plan.get_int64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
    if (bytes > workspace_limit) continue;
    const Tensor ws = workspace_tensor(bytes, device);
    void* ws_data = ws.defined() ? ws.raw_data() : nullptr;
    // An engine that fails to run is skipped.
    const float ms = median_run_ms(
        device, [&] { return execute(handle, plan, operands, ws_data) == CUDNN_STATUS_SUCCESS; });
    if (ms < 0) continue;
    ++best.timed;
    if (!best.plan || ms < best.ms) {
      best.plan = std::make_shared<ConvEnginePlan>(plan, bytes, engine, alignment);
      best.ms = ms;
    }
  }
  return best;
}

std::string describe(const ConvProblem& p) {
  const ConvGeometry& g = p.geometry;
  return concat(pass_name(p.pass), " ", dtype_name(p.dtype), g.channels_last ? " NHWC" : " NCHW",
                " x[", g.n, ",", g.c, ",", g.h, ",", g.w, "] w[", g.o, ",", g.c, ",", g.kh, ",",
                g.kw, "] stride ", g.stride_h, "x", g.stride_w, " pad ", g.pad_top, "x", g.pad_left,
                " dilation ", g.dil_h, "x", g.dil_w);
}

}  // namespace loom::detail
