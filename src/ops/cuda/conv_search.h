// Internal: conv.cu's cuDNN algorithm for each pass, chosen once per (shapes, dtype, geometry,
// determinism, tensor-op permission: TF32 or bfloat16, benchmark mode) from cuDNN's ranked
// heuristics or, in benchmark mode, by timing cudnnFind*Ex's legacy algorithms and the graph
// API's engines (conv_engines.h) on the call's own buffers, within a workspace limit; cached.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <memory>

#include "loom/ops/conv_backend.h"
#include "loom/ops/cuda/conv_engines.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

// A legacy algorithm with its math type, or (benchmark mode) a graph-API engine plan.
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  std::shared_ptr<const ConvEnginePlan> engine;
  size_t workspace = 0;
  float ms = -1;  // what a timed search measured
};

// One call as the search sees it: conv.cu's handle and descriptors for the symmetric geometry.
struct ConvCall {
  DType dtype;
  int device;
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  ConvGeometry s;
  // Whether tensor-core algorithms may run: TF32 for float32 data when allowed, and always for
  // bfloat16 (which tensor cores multiply exactly, accumulating in float32).
  bool tensor_ops;
};

// The cached choice for `pass` of this call, or a new search's. A timed search runs the pass on
// the operands, which are the call's own: it overwrites the output (which the call then
// overwrites too) and reads the inputs. The search leaves call.conv's math type set, but the
// passes share the descriptor: set the choice's math type again before running a legacy one.
AlgoChoice conv_algorithm(ConvPass pass, const ConvCall& call, const ConvOperands& operands);

// `bytes` of scratch from the caching allocator (undefined for 0).
Tensor conv_workspace(size_t bytes, int device);

inline void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

}  // namespace loom::detail
