// 2-D pooling over NCHW tensors: max (gradient to the first maximum of each window), average,
// adaptive average and global average, forward and backward on the CPU and CUDA.
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom {

// A (height, width) pair; one number means both: max_pool2d(x, 2), max_pool2d(x, {2, 3}).
struct Size2 {
  int64_t h = 0, w = 0;
  Size2(int64_t both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
};

// x [N, C, H, W] -> [N, C, OH, OW], OH = floor((H + 2 * pad - kernel) / stride) + 1.
// stride 0 means stride = kernel. Padding (at most half the kernel, as in PyTorch) never
// wins the max; windows are clipped to the input.
Tensor max_pool2d(const Tensor& x, Size2 kernel, Size2 stride = 0, Size2 padding = 0);

// The number of windows max_pool2d and avg_pool2d take along one axis of `in` pixels,
// (in + 2 * pad - kernel) / stride + 1 (stride 0 means the kernel), or 0 when the kernel is
// larger than the padded input. The ops size their output with it, and so do the spec's shape
// rules (nn::SpecShapes). Throws loom::Error naming `op` and `axis` ("height", "width") for a
// kernel or stride below 1, negative padding, or padding over half the kernel.
int64_t pool2d_output_size(const char* op, const char* axis, int64_t in, int64_t kernel,
                           int64_t stride, int64_t pad);

// The mean over each window. count_include_pad (PyTorch's default) divides by the window size
// including padding; otherwise by the number of input pixels it covers.
Tensor avg_pool2d(const Tensor& x, Size2 kernel, Size2 stride = 0, Size2 padding = 0,
                  bool count_include_pad = true);

// Output cell (i, j) averages rows [floor(i*H/out_h), ceil((i+1)*H/out_h)) and the same for
// columns, as PyTorch's adaptive_avg_pool2d.
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w);

// [N, C, H, W] -> [N, C, 1, 1]: the mean of each channel's plane.
Tensor global_avg_pool2d(const Tensor& x);

}  // namespace loom
