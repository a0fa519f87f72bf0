// conv2d and conv2d_relu as one case table for both devices: strides, paddings (Keras' 'same'
// and its asymmetric split), dilations, 1x1 kernels, with and without bias, up to a training
// step's sizes; each case also against the direct seven-loop convolution below.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "parity.h"

namespace loom::testing {

struct Pads {
  int64_t top, bottom, left, right;
};

// The definition: y[n,o,i,j] = b[o] + sum_{c,p,q} x[n,c,i*sh-top+p*dh, j*sw-left+q*dw] w[o,c,p,q].
inline Tensor reference_conv(const Tensor& x, const Tensor& w, const Tensor& b,
                             std::array<int64_t, 2> s, Pads pad, std::array<int64_t, 2> d) {
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>(w.size(0), 0.0);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), KH = w.size(2), KW = w.size(3);
  const int64_t OH = (H + pad.top + pad.bottom - d[0] * (KH - 1) - 1) / s[0] + 1;
  const int64_t OW = (W + pad.left + pad.right - d[1] * (KW - 1) - 1) / s[1] + 1;
  std::vector<double> y(N * O * OH * OW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = bv[o];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q) {
                const int64_t yy = i * s[0] - pad.top + p * d[0],
                              xx = j * s[1] - pad.left + q * d[1];
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                acc += xv[((n * C + c) * H + yy) * W + xx] * wv[((o * C + c) * KH + p) * KW + q];
              }
          y[((n * O + o) * OH + i) * OW + j] = acc;
        }
  return from_vector(y, {N, O, OH, OW});
}

struct ConvGeometry {
  std::string what;
  Shape x, w;
  Conv2dOptions opt;
  Pads pads;  // what opt should amount to
};

inline std::vector<ConvGeometry> conv_geometries() {
  using O = Conv2dOptions;
  return {
      {"plain", {2, 3, 7, 6}, {4, 3, 3, 3}, O(), {0, 0, 0, 0}},
      {"plain", {2, 3, 9, 8}, {4, 3, 3, 3}, O(), {0, 0, 0, 0}},
      {"stride 2 pad 1", {1, 2, 9, 8}, {3, 2, 3, 2}, O().stride(2).padding(1), {1, 1, 1, 1}},
      {"stride 2 pad 1", {2, 4, 11, 10}, {5, 4, 3, 2}, O().stride(2).padding(1), {1, 1, 1, 1}},
      {"stride 2 pad 1, float64",
       {2, 3, 7, 7},
       {2, 3, 3, 3},
       O().stride(2).padding(1),
       {1, 1, 1, 1}},
      {"stride 3", {2, 3, 10, 11}, {2, 3, 3, 3}, O().stride(3), {0, 0, 0, 0}},
      {"seed_cnn's first layer", {3, 3, 64, 64}, {32, 3, 3, 3}, O().stride(3), {0, 0, 0, 0}},
      {"dilation 2", {1, 2, 9, 7}, {2, 2, 3, 3}, O().dilation(2).padding(2, 1), {2, 2, 1, 1}},
      {"dilation 2", {1, 2, 9, 9}, {3, 2, 3, 3}, O().dilation(2).padding(2), {2, 2, 2, 2}},
      {"same, even kernel", {2, 1, 5, 5}, {3, 1, 2, 2}, O().padding(Padding::Same), {0, 1, 0, 1}},
      {"same, even kernel", {2, 2, 6, 6}, {3, 2, 2, 2}, O().padding(Padding::Same), {0, 1, 0, 1}},
      {"same", {1, 2, 7, 6}, {2, 2, 3, 3}, O().padding(Padding::Same), {1, 1, 1, 1}},
      {"same", {2, 3, 8, 7}, {4, 3, 3, 3}, O().padding(Padding::Same), {1, 1, 1, 1}},
      // Keras 'same' with stride 2: out = ceil(7 / 2) = 4, total pad 2 (1, 1) and ceil(6 / 2) = 3,
      // total pad 1 (0 before, 1 after).
      {"same, stride 2",
       {1, 2, 7, 6},
       {3, 2, 3, 3},
       O().stride(2).padding(Padding::Same),
       {1, 1, 0, 1}},
      {"same, stride 2",
       {2, 3, 7, 6},
       {4, 3, 3, 3},
       O().stride(2).padding(Padding::Same),
       {1, 1, 0, 1}},
      {"valid, stride 3",
       {2, 3, 8, 8},
       {2, 3, 3, 3},
       O().stride(3).padding(Padding::Valid),
       {0, 0, 0, 0}},
      {"pointwise", {1, 3, 5, 4}, {4, 3, 1, 1}, O(), {0, 0, 0, 0}},
      {"pointwise", {2, 8, 5, 5}, {6, 8, 1, 1}, O(), {0, 0, 0, 0}},
      {"stride 1x2, dilation 2x1, pad 1x0",
       {2, 2, 6, 7},
       {3, 2, 2, 3},
       O().stride(1, 2).dilation(2, 1).padding(1, 0),
       {1, 1, 0, 0}},
      {"pad 1", {4, 16, 16, 16}, {32, 16, 3, 3}, O().padding(1), {1, 1, 1, 1}},
      // 12800 outputs per channel: the bias gradient is summed in several chunks per channel.
      {"pad 1, long bias sums", {8, 3, 40, 40}, {4, 3, 3, 3}, O().padding(1), {1, 1, 1, 1}},
  };
}

// conv2d_relu's geometries: planes of 256 (the bias + relu pass 4 elements at a time), of 35
// (one at a time), and seed_cnn's.
inline std::vector<ConvGeometry> conv_relu_geometries() {
  using O = Conv2dOptions;
  return {
      {"pad 1", {3, 3, 16, 16}, {8, 3, 3, 3}, O().padding(1), {1, 1, 1, 1}},
      {"plain", {2, 3, 9, 7}, {5, 3, 3, 3}, O(), {0, 0, 0, 0}},
      {"stride 3", {2, 4, 64, 64}, {6, 4, 3, 3}, O().stride(3), {0, 0, 0, 0}},
  };
}

// Every geometry with and without bias. Weights in [-0.5, 0.5) keep the outputs of order one.
inline std::vector<ParityCase> conv_cases() {
  std::vector<ParityCase> cases;
  const auto add = [&cases](const ConvGeometry& g, bool relu) {
    for (bool bias : {true, false}) {
      ParityCase c;
      c.name = std::string(relu ? "conv2d_relu " : "conv2d ") + g.what + ", x " + shape_str(g.x) +
               " w " + shape_str(g.w) + (bias ? " with bias" : " without bias");
      c.inputs = {normal(g.x), uniform_in(g.w, -0.5, 0.5)};
      if (bias) c.inputs.push_back(normal({g.w[0]}));
      const Conv2dOptions opt = g.opt;
      c.f = [opt, bias, relu](const std::vector<Tensor>& in) {
        const Tensor b = bias ? in[2] : Tensor();
        return relu ? conv2d_relu(in[0], in[1], b, opt) : conv2d(in[0], in[1], b, opt);
      };
      const Pads pads = g.pads;
      c.reference = [opt, pads, bias, relu](const std::vector<Tensor>& in) {
        const Tensor y =
            reference_conv(in[0], in[1], bias ? in[2] : Tensor(), opt.stride_, pads, opt.dilation_);
        return relu ? loom::relu(y) : y;
      };
      if (relu || g.what.find("float64") != std::string::npos) c.dtypes = {kFloat32, kFloat64};
      // relu's kink: a finite difference may straddle it.
      if (relu) c.gradcheck = Gradcheck::Off;
      cases.push_back(c);
    }
  };
  for (const ConvGeometry& g : conv_geometries()) add(g, false);
  for (const ConvGeometry& g : conv_relu_geometries()) add(g, true);
  return cases;
}

}  // namespace loom::testing
