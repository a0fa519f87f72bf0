// Internal: conv2d's backend entry points, called by conv.cpp and implemented by cpu/conv.cpp
// (im2col + Eigen) and cuda/conv.cu (cuDNN), and the geometry they share. Inputs arrive
// validated and contiguous (in the geometry's memory format), on one device, of one floating
// dtype; outputs and gradients come back in that format.
#pragma once

#include <cstdint>
#include <string>

#include "loom/tensor/tensor.h"

namespace loom::detail {

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t o = 0, kh = 0, kw = 0;       // weight [o, c, kh, kw]
  int64_t oh = 0, ow = 0;              // output
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t dil_h = 1, dil_w = 1;
  // CUDA only: input, weight, output and gradients stored channels-last (NHWC; the weight
  // [o, kh, kw, c]) instead of NCHW.
  bool channels_last = false;
};

struct ConvGrads {
  Tensor input, weight, bias;  // undefined where not asked for
};

Tensor cpu_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const ConvGeometry& g);
ConvGrads cpu_conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                              const ConvGeometry& g, bool need_input, bool need_weight,
                              bool need_bias);

// The bias (and, with `relu`, max(., 0)) is added by one pass of loom's own over cuDNN's output.
Tensor cuda_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const ConvGeometry& g, bool relu = false);
ConvGrads cuda_conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                               const ConvGeometry& g, bool need_input, bool need_weight,
                               bool need_bias);
int64_t cuda_conv_algorithm_searches();
double cuda_conv_algorithm_search_seconds();
int64_t cuda_conv_engine_choices();

// For tests: benchmark mode times the graph API's engines alone, without the legacy algorithms
// to compare against, so every pass they serve runs on an engine plan.
void set_conv_search_engines_only(bool engines_only);
bool conv_search_engines_only();
std::string cuda_library_versions();

}  // namespace loom::detail
