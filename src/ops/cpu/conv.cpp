// conv2d on the CPU: im2col + one Eigen GEMM per image, forward and both backward passes,
// with images spread over threads in contiguous chunks (each chunk owns its column buffer).
#include <algorithm>
#include <memory>
#include <vector>

#include "loom/ops/conv_backend.h"
#include "loom/ops/cpu/eigen.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatMap = Eigen::Map<RowMajor<T>>;
template <typename T>
using ConstMatMap = Eigen::Map<const RowMajor<T>>;

// A column buffer left uninitialised: im2col or a GEMM writes every entry before it is read.
template <typename T>
std::unique_ptr<T[]> scratch(int64_t n) {
  return n > 0 ? std::unique_ptr<T[]>(new T[n]) : nullptr;
}

// A 1x1 kernel with unit stride and no padding reads the image itself as the column matrix.
bool is_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0;
}

// Outputs [lo, hi) along one axis whose tap at `first` (= tap * dilation - pad) lands inside
// an input of length `in`: 0 <= o * stride + first < in.
void inside_range(int64_t in, int64_t out, int64_t stride, int64_t first, int64_t& lo,
                  int64_t& hi) {
  lo = first >= 0 ? 0 : (-first + stride - 1) / stride;
  hi = in - first <= 0 ? 0 : (in - first + stride - 1) / stride;
  hi = std::min(hi, out);
  lo = std::min(lo, hi);
}

// Visits every row segment of the column matrix [c*kh*kw, oh*ow]: body(col, image, lo, hi)
// where col is the offset of the segment's first entry (ox = 0), and for ox in [lo, hi) the
// entry col + ox comes from pixel image + ox * stride_w of the image; outside [lo, hi) it is
// padding. im2col and col2im both walk the matrix through this, so they stay adjoint.
template <typename Body>
void for_each_col_segment(const ConvGeometry& g, Body body) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t row = ((c * g.kh + i) * g.kw + j) * g.oh * g.ow;
        const int64_t x0 = j * g.dil_w - g.pad_left;
        int64_t lo, hi;
        inside_range(g.w, g.ow, g.stride_w, x0, lo, hi);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.stride_h - g.pad_top + i * g.dil_h;
          const bool inside = iy >= 0 && iy < g.h;
          body(row + oy * g.ow, (c * g.h + iy) * g.w + x0, inside ? lo : 0, inside ? hi : 0);
        }
      }
    }
  }
}

// col[(c * kh + i) * kw + j][oy * ow + ox] = image[c][oy*sh - pt + i*dh][ox*sw - pl + j*dw],
// zero outside the image. image [c, h, w], col [c*kh*kw, oh*ow].
template <typename T>
void im2col(const T* image, T* col, const ConvGeometry& g) {
  const int64_t sw = g.stride_w, ow = g.ow;
  for_each_col_segment(g, [&](int64_t c, int64_t x, int64_t lo, int64_t hi) {
    T* dst = col + c;
    // Most segments have no padding: skip the fill calls (each a memset) rather than make empty
    // ones.
    if (lo > 0) std::fill(dst, dst + lo, T(0));
    const T* src = image + x;
    for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * sw];
    if (hi < ow) std::fill(dst + hi, dst + ow, T(0));
  });
}

// The adjoint of im2col: image (zeroed here) += every column entry at the pixel it came from.
template <typename T>
void col2im(const T* col, T* image, const ConvGeometry& g) {
  std::fill(image, image + g.c * g.h * g.w, T(0));
  const int64_t sw = g.stride_w;
  for_each_col_segment(g, [&](int64_t c, int64_t x, int64_t lo, int64_t hi) {
    const T* src = col + c;
    T* dst = image + x;
    for (int64_t ox = lo; ox < hi; ++ox) dst[ox * sw] += src[ox];
  });
}

template <typename T>
void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out,
             const ConvGeometry& g) {
  const int64_t ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  const T* xp = x.data_ptr<T>();
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* yp = out.data_ptr<T>();
  const ConstMatMap<T> w(weight.data_ptr<T>(), g.o, ckk);
  const bool pointwise = is_pointwise(g);
  parallel_chunks(
      g.n,
      [&](int64_t, int64_t begin, int64_t end) {
        const std::unique_ptr<T[]> col = scratch<T>(pointwise ? 0 : ckk * ohw);
        for (int64_t n = begin; n < end; ++n) {
          const T* image = xp + n * g.c * g.h * g.w;
          if (!pointwise) im2col(image, col.get(), g);
          MatMap<T> y(yp + n * g.o * ohw, g.o, ohw);
          // [o, ckk] x [ckk, oh*ow] -> [o, oh*ow]
          y.noalias() = w * ConstMatMap<T>(pointwise ? image : col.get(), ckk, ohw);
          if (bp) y.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(bp, g.o);
        }
      },
      /*grain=*/1);
}

template <typename T>
void backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const ConvGeometry& g,
              ConvGrads& grads) {
  const int64_t ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  const T* dyp = dy.data_ptr<T>();
  const T* xp = x.data_ptr<T>();
  const ConstMatMap<T> w(weight.data_ptr<T>(), g.o, ckk);
  const bool pointwise = is_pointwise(g);
  const bool need_input = grads.input.defined(), need_weight = grads.weight.defined();
  T* dxp = need_input ? grads.input.data_ptr<T>() : nullptr;
  std::vector<RowMajor<T>> partial_dw(need_weight ? parallel_threads() : 0);
  const int64_t chunks = parallel_chunks(
      g.n,
      [&](int64_t k, int64_t begin, int64_t end) {
        const std::unique_ptr<T[]> col = scratch<T>(pointwise || !need_weight ? 0 : ckk * ohw);
        const std::unique_ptr<T[]> dcol = scratch<T>(pointwise || !need_input ? 0 : ckk * ohw);
        if (need_weight) partial_dw[k] = RowMajor<T>::Zero(g.o, ckk);
        for (int64_t n = begin; n < end; ++n) {
          const T* image = xp + n * g.c * g.h * g.w;
          const ConstMatMap<T> dy_n(dyp + n * g.o * ohw, g.o, ohw);
          if (need_weight) {
            if (!pointwise) im2col(image, col.get(), g);
            // [o, oh*ow] x [oh*ow, ckk] -> [o, ckk]
            partial_dw[k].noalias() +=
                dy_n * ConstMatMap<T>(pointwise ? image : col.get(), ckk, ohw).transpose();
          }
          if (need_input) {
            T* dx_n = dxp + n * g.c * g.h * g.w;
            // [ckk, o] x [o, oh*ow] -> [ckk, oh*ow]
            MatMap<T>(pointwise ? dx_n : dcol.get(), ckk, ohw).noalias() = w.transpose() * dy_n;
            if (!pointwise) col2im(dcol.get(), dx_n, g);
          }
        }
      },
      /*grain=*/1);
  if (need_weight) {
    // Summed in chunk order, so the result does not depend on thread timing.
    MatMap<T> dw(grads.weight.data_ptr<T>(), g.o, ckk);
    dw = partial_dw[0];
    for (int64_t k = 1; k < chunks; ++k) dw += partial_dw[k];
  }
  if (grads.bias.defined()) {
    T* db = grads.bias.data_ptr<T>();
    parallel_for(
        g.o,
        [&](int64_t o) {
          // Each image's plane is summed by Eigen (vectorised), the planes in double.
          double s = 0.0;
          for (int64_t n = 0; n < g.n; ++n) {
            s += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(dyp + (n * g.o + o) * ohw,
                                                                       ohw)
                     .sum();
          }
          db[o] = static_cast<T>(s);
        },
        /*grain=*/std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.n * ohw)));
  }
}

}  // namespace

Tensor cpu_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const ConvGeometry& g) {
  Tensor out = empty({g.n, g.o, g.oh, g.ow}, x.options());
  LOOM_DISPATCH_FLOATING(x.dtype(), "conv2d", [&] { forward<scalar_t>(x, weight, bias, out, g); });
  return out;
}

ConvGrads cpu_conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                              const ConvGeometry& g, bool need_input, bool need_weight,
                              bool need_bias) {
  ConvGrads grads;
  if (need_input) grads.input = empty(x.shape(), x.options());
  if (need_weight) grads.weight = empty(weight.shape(), weight.options());
  if (need_bias) grads.bias = empty({g.o}, weight.options());
  LOOM_DISPATCH_FLOATING(x.dtype(), "conv2d backward",
                         [&] { backward<scalar_t>(grad_out, x, weight, g, grads); });
  return grads;
}

}  // namespace loom::detail
