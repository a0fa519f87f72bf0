// Convolutions through cuDNN's graph API, for benchmark mode: the engine configurations
// cuDNN's heuristics (mode A) and its fallback list offer for one pass, filtered by loom's
// numerical rules, built into execution plans and timed on the call's own buffers. The legacy
// cudnnFind* search times only the legacy algorithm list; the graph API also offers Hopper's
// own kernels (PyTorch's cudnn.benchmark searches these).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>

#include "loom/ops/conv_backend.h"
#include "loom/ops/cuda/cudnn_graph.h"

namespace loom::detail {

enum class ConvPass : int64_t { Forward, BackwardData, BackwardFilter };

// A convolution's three tensors in the forward roles, whatever the pass: x (the input, or the
// input gradient backward-data writes), w (the weight, or the weight gradient) and y (the
// output, or the output gradient the backward passes read).
struct ConvOperands {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

// The largest power of two up to 16 that divides the address: what a plan built for these
// operands may assume, so it is part of the algorithm cache's key.
int64_t operand_alignment(const void* p);

struct ConvProblem {
  ConvPass pass = ConvPass::Forward;
  DType dtype = kFloat32;   // float32 or bfloat16 (float32 accumulation)
  ConvGeometry geometry;    // padded symmetrically
  bool tensor_ops = false;  // TF32 for float32 data; bfloat16 always uses tensor cores
  bool deterministic = false;
};

// One finalized execution plan, with everything it refers to.
class ConvEnginePlan {
 public:
  ConvEnginePlan(cuda::BackendDescriptor plan, size_t workspace, int64_t engine,
                 const int64_t alignment[3]);
  size_t workspace() const { return workspace_; }
  int64_t engine() const { return engine_; }  // cuDNN's global engine index
  // Runs the pass on `handle`'s stream; the operands must be as aligned as the search's.
  void run(cudnnHandle_t handle, const ConvOperands& operands, void* workspace) const;

 private:
  cuda::BackendDescriptor plan_;
  size_t workspace_;
  int64_t engine_;
  int64_t alignment_[3];
};

struct TimedEngine {
  std::shared_ptr<const ConvEnginePlan> plan;  // null when no configuration qualified
  float ms = 0;                                // its median time over the timed runs
  int timed = 0;                               // how many configurations were timed
};

// The fastest qualifying engine configuration for `problem` on `operands` (the output operand
// is overwritten), needing at most `workspace_limit` bytes of workspace, among the first
// `max_timed` that qualify in cuDNN's ranking (0: all of them). Qualifying: no
// down-converted inputs or reduced-precision accumulation, no runtime compilation (seconds of
// NVRTC on a step), tensor cores only when problem.tensor_ops, deterministic when asked.
TimedEngine fastest_conv_engine(cudnnHandle_t handle, int device, const ConvProblem& problem,
                                const ConvOperands& operands, size_t workspace_limit,
                                int64_t max_timed);

// A line for LOOM_CONV_SEARCH_LOG: the problem's pass, dtype, layout and shapes.
std::string describe(const ConvProblem& problem);

}  // namespace loom::detail
