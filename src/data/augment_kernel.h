// The per-pixel warp shared by the CPU and CUDA augmentation, so both compute the same value:
// bilinear (or nearest) sampling of a uint8 HWC image at an affine-mapped point, as scipy's
// ndimage.affine_transform(order=1) does with mode 'nearest' or 'constant'.
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/data/augment.h"
#include "loom/tensor/strided_index.h"  // LOOM_HOST_DEVICE

namespace loom::data::detail {

struct WarpConstants {
  int64_t h, w, c;
  int constant_fill;  // 1: points outside the image read cval; 0: clamp to the edge
  int nearest;        // 1: read the nearest pixel; 0: bilinear
  double cval;
  double rescale;
  double mean[4];     // per channel (up to 4), 0 when unused
  double inv_std[4];  // per channel, 1 when unused
};

// The constants of one batch's warp (host side; shared by both backends).
WarpConstants warp_constants(const AugmentOptions& options, int64_t h, int64_t w, int64_t c);

// Output pixel (i, j) of one image for the map m (SampleTransform::m): its channel ch goes to
// out[ch * plane] (plane = H * W for CHW output). The sampling position is computed once for all
// channels.
LOOM_HOST_DEVICE void warp_pixel(const uint8_t* image, const WarpConstants& k, const double* m,
                                 int64_t i, int64_t j, float* out, int64_t plane) {
  const double jj = m[6] != 0.0 ? static_cast<double>(k.w - 1 - j) : static_cast<double>(j);
  const double di = static_cast<double>(i);
  double r = m[0] * di + m[1] * jj + m[2];
  double col = m[3] * di + m[4] * jj + m[5];
  if (k.nearest) {  // the pixel whose square holds the point; the bilinear weights become 0 and 1
    r = ::floor(r + 0.5);
    col = ::floor(col + 0.5);
  }
  const double rmax = static_cast<double>(k.h - 1), cmax = static_cast<double>(k.w - 1);
  // scipy's 'constant' does not interpolate beyond the edges; a hair of slack absorbs rounding
  // of points that land exactly on an edge.
  const double eps = 1e-9;
  if (k.constant_fill && (r < -eps || r > rmax + eps || col < -eps || col > cmax + eps)) {
    for (int64_t ch = 0; ch < k.c; ++ch) {
      out[ch * plane] = static_cast<float>((k.cval * k.rescale - k.mean[ch]) * k.inv_std[ch]);
    }
    return;
  }
  r = r < 0.0 ? 0.0 : (r > rmax ? rmax : r);
  col = col < 0.0 ? 0.0 : (col > cmax ? cmax : col);
  const int64_t r0 = static_cast<int64_t>(::floor(r)), c0 = static_cast<int64_t>(::floor(col));
  const int64_t r1 = r0 + 1 < k.h ? r0 + 1 : r0, c1 = c0 + 1 < k.w ? c0 + 1 : c0;
  const double fr = r - static_cast<double>(r0), fc = col - static_cast<double>(c0);
  const uint8_t* p00 = image + (r0 * k.w + c0) * k.c;
  const uint8_t* p01 = image + (r0 * k.w + c1) * k.c;
  const uint8_t* p10 = image + (r1 * k.w + c0) * k.c;
  const uint8_t* p11 = image + (r1 * k.w + c1) * k.c;
  for (int64_t ch = 0; ch < k.c; ++ch) {
    const double value = (1.0 - fr) * ((1.0 - fc) * p00[ch] + fc * p01[ch]) +
                         fr * ((1.0 - fc) * p10[ch] + fc * p11[ch]);
    out[ch * plane] = static_cast<float>((value * k.rescale - k.mean[ch]) * k.inv_std[ch]);
  }
}

}  // namespace loom::data::detail
