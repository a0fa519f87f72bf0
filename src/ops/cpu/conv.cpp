// conv2d on the CPU: im2col + one Eigen GEMM per image, forward and both backward passes,
// with images spread over threads in contiguous chunks (each thread owns its column buffer).
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "ops/conv_kernels.h"
#include "tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatMap = Eigen::Map<RowMajor<T>>;
template <typename T>
using ConstMatMap = Eigen::Map<const RowMajor<T>>;

// A 1x1 kernel with unit stride and no padding reads the image itself as the column matrix.
bool is_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0;
}

// col[(c * kh + i) * kw + j][oy * ow + ox] = image[c][oy*sh - pt + i*dh][ox*sw - pl + j*dw],
// zero outside the image. image [c, h, w], col [c*kh*kw, oh*ow].
template <typename T>
void im2col(const T* image, T* col, const ConvGeometry& g) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = col + ((c * g.kh + i) * g.kw + j) * g.oh * g.ow;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.stride_h - g.pad_top + i * g.dil_h;
          T* dst = row + oy * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(dst, dst + g.ow, T(0));
            continue;
          }
          const T* src = image + (c * g.h + iy) * g.w;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.stride_w - g.pad_left + j * g.dil_w;
            dst[ox] = (ix >= 0 && ix < g.w) ? src[ix] : T(0);
          }
        }
      }
    }
  }
}

// The adjoint of im2col: image (zeroed here) += every column entry at the pixel it came from.
template <typename T>
void col2im(const T* col, T* image, const ConvGeometry& g) {
  std::fill(image, image + g.c * g.h * g.w, T(0));
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = col + ((c * g.kh + i) * g.kw + j) * g.oh * g.ow;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.stride_h - g.pad_top + i * g.dil_h;
          if (iy < 0 || iy >= g.h) continue;
          const T* src = row + oy * g.ow;
          T* dst = image + (c * g.h + iy) * g.w;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.stride_w - g.pad_left + j * g.dil_w;
            if (ix >= 0 && ix < g.w) dst[ix] += src[ox];
          }
        }
      }
    }
  }
}

// Splits [0, n) into at most one contiguous chunk per thread and runs body(chunk, begin, end).
template <typename Body>
int64_t for_each_chunk(int64_t n, Body body) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(n, omp_get_max_threads()));
  parallel_for(
      chunks,
      [&](int64_t k) { body(k, n * k / chunks, n * (k + 1) / chunks); },
      /*grain=*/1);
  return chunks;
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
  for_each_chunk(g.n, [&](int64_t, int64_t begin, int64_t end) {
    std::vector<T> col(pointwise ? 0 : ckk * ohw);
    for (int64_t n = begin; n < end; ++n) {
      const T* image = xp + n * g.c * g.h * g.w;
      if (!pointwise) im2col(image, col.data(), g);
      MatMap<T> y(yp + n * g.o * ohw, g.o, ohw);
      // [o, ckk] x [ckk, oh*ow] -> [o, oh*ow]
      y.noalias() = w * ConstMatMap<T>(pointwise ? image : col.data(), ckk, ohw);
      if (bp) y.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(bp, g.o);
    }
  });
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
  std::vector<RowMajor<T>> partial_dw(need_weight ? omp_get_max_threads() : 0);
  const int64_t chunks = for_each_chunk(g.n, [&](int64_t k, int64_t begin, int64_t end) {
    std::vector<T> col(pointwise || !need_weight ? 0 : ckk * ohw);
    std::vector<T> dcol(pointwise || !need_input ? 0 : ckk * ohw);
    if (need_weight) partial_dw[k] = RowMajor<T>::Zero(g.o, ckk);
    for (int64_t n = begin; n < end; ++n) {
      const T* image = xp + n * g.c * g.h * g.w;
      const ConstMatMap<T> dy_n(dyp + n * g.o * ohw, g.o, ohw);
      if (need_weight) {
        if (!pointwise) im2col(image, col.data(), g);
        // [o, oh*ow] x [oh*ow, ckk] -> [o, ckk]
        partial_dw[k].noalias() += dy_n * ConstMatMap<T>(pointwise ? image : col.data(), ckk, ohw).transpose();
      }
      if (need_input) {
        T* dx_n = dxp + n * g.c * g.h * g.w;
        // [ckk, o] x [o, oh*ow] -> [ckk, oh*ow]
        MatMap<T>(pointwise ? dx_n : dcol.data(), ckk, ohw).noalias() = w.transpose() * dy_n;
        if (!pointwise) col2im(dcol.data(), dx_n, g);
      }
    }
  });
  if (need_weight) {
    // Summed in chunk order, so the result does not depend on thread timing.
    MatMap<T> dw(grads.weight.data_ptr<T>(), g.o, ckk);
    dw = partial_dw[0];
    for (int64_t k = 1; k < chunks; ++k) dw += partial_dw[k];
  }
  if (grads.bias.defined()) {
    T* db = grads.bias.data_ptr<T>();
    parallel_for(g.o, [&](int64_t o) {
      double s = 0.0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* row = dyp + (n * g.o + o) * ohw;
        for (int64_t i = 0; i < ohw; ++i) s += row[i];
      }
      db[o] = static_cast<T>(s);
    }, /*grain=*/64);
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
