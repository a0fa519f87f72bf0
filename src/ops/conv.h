// 2-D convolution over NCHW tensors (cross-correlation, as in every framework), forward and
// backward: im2col + Eigen GEMM on the CPU, cuDNN on CUDA.
#pragma once

#include <array>
#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom {

// Explicit: Conv2dOptions::padding on both sides. Valid: no padding.
// Same (Keras/TensorFlow rule): out = ceil(in / stride); the total padding
// max((out - 1) * stride + dilation * (k - 1) + 1 - in, 0) is split with the odd pixel at the
// bottom/right. For stride 1 this keeps the size, as PyTorch's padding='same' does.
enum class Padding { Explicit, Valid, Same };

struct Conv2dOptions {
  std::array<int64_t, 2> stride_{1, 1};
  std::array<int64_t, 2> padding_{0, 0};
  Padding padding_mode_ = Padding::Explicit;
  std::array<int64_t, 2> dilation_{1, 1};

  Conv2dOptions& stride(int64_t s) {
    stride_ = {s, s};
    return *this;
  }
  Conv2dOptions& stride(int64_t h, int64_t w) {
    stride_ = {h, w};
    return *this;
  }
  Conv2dOptions& padding(int64_t p) {
    padding_ = {p, p};
    padding_mode_ = Padding::Explicit;
    return *this;
  }
  Conv2dOptions& padding(int64_t h, int64_t w) {
    padding_ = {h, w};
    padding_mode_ = Padding::Explicit;
    return *this;
  }
  Conv2dOptions& padding(Padding mode) {
    padding_mode_ = mode;
    return *this;
  }
  Conv2dOptions& dilation(int64_t d) {
    dilation_ = {d, d};
    return *this;
  }
  Conv2dOptions& dilation(int64_t h, int64_t w) {
    dilation_ = {h, w};
    return *this;
  }
};

// x [N, C, H, W] (*) weight [O, C, kh, kw] + bias [O] (undefined: none) -> [N, O, OH, OW],
// OH = floor((H + pad_top + pad_bottom - dilation * (kh - 1) - 1) / stride) + 1.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dOptions& options = {});

// conv2d's geometry along one axis (0: height, 1: width) of `in` pixels for a kernel of
// `kernel`: the padding before and after, and the output size, 0 when the dilated kernel
// (dilation * (kernel - 1) + 1) is larger than the padded input. conv2d computes its output
// shape with it, and so do the spec's shape rules (nn::SpecShapes), so the two cannot differ.
// Expects what conv2d checks: kernel, stride and dilation >= 1, padding >= 0, and sizes below
// 2^31 (no intermediate then passes 2^63).
struct ConvAxis {
  int64_t pad_before = 0, pad_after = 0, out = 0;
};
ConvAxis conv2d_axis(const Conv2dOptions& options, int axis, int64_t in, int64_t kernel);

// relu(conv2d(x, weight, bias, options)), with the bias and the relu in one pass over the
// output on CUDA (Sequential runs a Conv2d followed by a ReLU through it); the gradients are
// those of the composition. On the CPU it is the composition.
Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                   const Conv2dOptions& options = {});

// Restricts cuDNN to deterministic convolution algorithms (bitwise-reproducible training on a
// GPU, at some cost in speed). The CPU path is always deterministic.
void set_deterministic(bool deterministic);
bool deterministic();

// Chooses each cuDNN convolution's algorithms by timing them (once per shape and device, on the
// first call's own buffers, within the workspace limit) instead of by cuDNN's heuristics, as
// PyTorch's torch.backends.cudnn.benchmark: faster steps after a slower first one. Off by
// default. With set_deterministic(true) only deterministic algorithms are timed; the choice may
// still differ between runs, so bitwise reproducibility across runs needs benchmark mode off.
void set_conv_benchmark(bool benchmark);
bool conv_benchmark();

// How many of the cuDNN graph API's engine configurations benchmark mode times for each pass,
// best-ranked first (PyTorch's torch.backends.cudnn.benchmark_limit); 0 times every one that
// qualifies. Default 16. Each costs a plan build and four runs of the pass, once per shape.
void set_conv_benchmark_limit(int64_t limit);
int64_t conv_benchmark_limit();

// Lets cuDNN convolutions on float32 use TF32 tensor cores (inputs rounded to a 10-bit
// mantissa, accumulation in float32): several times faster on Ampere and later GPUs, with
// results within ~1e-3 relative of full float32 instead of ~1e-6. On by default, as PyTorch's
// torch.backends.cudnn.allow_tf32; matrix multiplication (linalg) always stays in full float32.
// The CPU path and float64 are unaffected.
void set_conv_allow_tf32(bool allow);
bool conv_allow_tf32();

// Sets conv_allow_tf32 for a scope and restores the previous value at its end (tests that
// compare the GPU with the CPU at float32 tolerances).
class ConvTf32Scope {
 public:
  explicit ConvTf32Scope(bool allow) : previous_(conv_allow_tf32()) { set_conv_allow_tf32(allow); }
  ~ConvTf32Scope() { set_conv_allow_tf32(previous_); }
  ConvTf32Scope(const ConvTf32Scope&) = delete;
  ConvTf32Scope& operator=(const ConvTf32Scope&) = delete;

 private:
  bool previous_;
};

// How many cuDNN algorithm searches have run in this process: a second conv2d with the same
// shapes reuses the cached choice and does not add to it (0 in a CPU-only build).
int64_t conv_algorithm_searches();

// The wall time those searches took, in seconds: with set_conv_benchmark(true) mostly the timing
// of every candidate (plan builds included), a one-time cost per shape that a short run pays in
// full (0 in a CPU-only build).
double conv_algorithm_search_seconds();

// How many of those searches (benchmark mode) chose an engine of cuDNN's graph API because it
// ran faster than every legacy algorithm cudnnFind* timed (0 in a CPU-only build).
int64_t conv_engine_choices();

// "CUDA runtime 13.0, cuDNN 9.10.2": the libraries this process runs with, for reports ("" in a
// CPU-only build).
std::string cuda_library_versions();

}  // namespace loom
