// Keras' ImageDataGenerator random transform on the CPU: the draw, the matrix, and the warp.
#include "loom/data/augment.h"

#include <cmath>

#include "loom/data/augment_kernel.h"
#include "loom/ops/dispatch.h"
#include "loom/tensor/parallel.h"
#include "loom/tensor/random_bits.h"

namespace loom::data {

namespace {

constexpr double kPi = 3.14159265358979323846;

// 3x3 row-major product a * b (only the affine part matters; the last row stays 0 0 1).
void matmul3(const double a[9], const double b[9], double out[9]) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
}

void times(double acc[9], const double m[9]) {
  double out[9];
  matmul3(acc, m, out);
  for (int i = 0; i < 9; ++i) acc[i] = out[i];
}

}  // namespace

AugmentOptions AugmentOptions::keras_seed(uint64_t seed) {
  AugmentOptions o;
  o.rescale = 1.0 / 255.0;
  o.shear_range = 0.2;
  o.zoom_range(0.2);
  o.horizontal_flip = true;
  o.seed = seed;
  return o;
}

AugmentOptions AugmentOptions::torchvision_seed(uint64_t seed) {
  AugmentOptions o = keras_seed(seed);
  // torchvision's scale s magnifies; Keras' zoom z is its reciprocal (it scales the sampling
  // grid), so scale 0.8-1.2 is zoom 1/1.2-1/0.8 (drawn uniform in z, not in s).
  o.zoom_low = 1.0 / 1.2;
  o.zoom_high = 1.0 / 0.8;
  o.isotropic_zoom = true;
  o.fill_mode = FillMode::Constant;
  o.cval = 0.0;
  o.interpolation = WarpInterpolation::Nearest;
  return o;
}

AffineParams draw_transform(const AugmentOptions& o, int64_t height, int64_t width, int64_t epoch,
                            int64_t index) {
  // One key per (seed, epoch); counters 8 * index + k for the k-th draw of the sample.
  const uint64_t key = random_bits::hash(o.seed, static_cast<uint64_t>(epoch));
  const uint64_t base = 8 * static_cast<uint64_t>(index);
  auto uniform = [&](int k, double lo, double hi) {
    return lo + (hi - lo) * random_bits::uniform(key, base + k);
  };
  AffineParams p;
  if (o.rotation_range != 0.0) p.theta = uniform(0, -o.rotation_range, o.rotation_range);
  if (o.height_shift_range != 0.0) {
    p.tx = uniform(1, -o.height_shift_range, o.height_shift_range);
    if (o.height_shift_range < 1.0) p.tx *= static_cast<double>(height);
  }
  if (o.width_shift_range != 0.0) {
    p.ty = uniform(2, -o.width_shift_range, o.width_shift_range);
    if (o.width_shift_range < 1.0) p.ty *= static_cast<double>(width);
  }
  if (o.shear_range != 0.0) p.shear = uniform(3, -o.shear_range, o.shear_range);
  if (o.zoom_low != 1.0 || o.zoom_high != 1.0) {
    p.zx = uniform(4, o.zoom_low, o.zoom_high);
    p.zy = o.isotropic_zoom ? p.zx : uniform(5, o.zoom_low, o.zoom_high);
  }
  p.flip = o.horizontal_flip && random_bits::uniform(key, base + 6) < 0.5;
  return p;
}

SampleTransform transform_matrix(const AffineParams& p, int64_t height, int64_t width) {
  // Keras builds T in (x, y) order and applies P T P (P swaps the axes) to (row, col) arrays;
  // this is P T P written out in (row, col), centre swap included.
  const double theta = p.theta * kPi / 180.0, shear = p.shear * kPi / 180.0;
  const double o_r = width / 2.0 - 0.5, o_c = height / 2.0 - 0.5;
  double t[9] = {1, 0, o_r, 0, 1, o_c, 0, 0, 1};
  const double rotation[9] = {
      std::cos(theta), std::sin(theta), 0, -std::sin(theta), std::cos(theta), 0, 0, 0, 1};
  const double shift[9] = {1, 0, p.ty, 0, 1, p.tx, 0, 0, 1};
  const double shearing[9] = {std::cos(shear), 0, 0, -std::sin(shear), 1, 0, 0, 0, 1};
  const double zoom[9] = {p.zy, 0, 0, 0, p.zx, 0, 0, 0, 1};
  const double uncentre[9] = {1, 0, -o_r, 0, 1, -o_c, 0, 0, 1};
  times(t, rotation);
  times(t, shift);
  times(t, shearing);
  times(t, zoom);
  times(t, uncentre);
  SampleTransform s;
  for (int i = 0; i < 6; ++i) s.m[i] = t[i];
  s.m[6] = p.flip ? 1.0 : 0.0;
  return s;
}

namespace detail {

WarpConstants warp_constants(const AugmentOptions& options, int64_t h, int64_t w, int64_t c) {
  WarpConstants k{};
  k.h = h, k.w = w, k.c = c;
  k.constant_fill = options.fill_mode == FillMode::Constant ? 1 : 0;
  k.nearest = options.interpolation == WarpInterpolation::Nearest ? 1 : 0;
  k.cval = options.cval;
  k.rescale = options.rescale;
  for (int64_t ch = 0; ch < 4; ++ch) {
    k.mean[ch] = ch < static_cast<int64_t>(options.mean.size()) ? options.mean[ch] : 0.0;
    k.inv_std[ch] = ch < static_cast<int64_t>(options.std.size()) ? 1.0 / options.std[ch] : 1.0;
  }
  return k;
}

void check_augment_options(const AugmentOptions& o, int64_t channels) {
  LOOM_CHECK(channels >= 1 && channels <= 4, "augment: images must have 1 to 4 channels, got ",
             channels);
  LOOM_CHECK(o.mean.empty() || static_cast<int64_t>(o.mean.size()) == channels,
             "augment: mean has ", o.mean.size(), " values for ", channels, " channels");
  LOOM_CHECK(o.std.empty() || static_cast<int64_t>(o.std.size()) == channels, "augment: std has ",
             o.std.size(), " values for ", channels, " channels");
  for (double s : o.std) LOOM_CHECK(s > 0.0, "augment: std values must be positive, got ", s);
  LOOM_CHECK(o.zoom_low > 0.0 && o.zoom_low <= o.zoom_high, "augment: zoom range [", o.zoom_low,
             ", ", o.zoom_high, "] must be positive and ordered");
  LOOM_CHECK(o.rotation_range >= 0.0 && o.shear_range >= 0.0 && o.width_shift_range >= 0.0 &&
                 o.height_shift_range >= 0.0,
             "augment: ranges must be non-negative (rotation ", o.rotation_range, ", shear ",
             o.shear_range, ", shifts ", o.height_shift_range, ", ", o.width_shift_range, ")");
}

void warp_image_cpu(const uint8_t* image, int64_t h, int64_t w, int64_t c, const double* m,
                    const AugmentOptions& options, float* out) {
  const WarpConstants k = warp_constants(options, h, w, c);
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) warp_pixel(image, k, m, i, j, out + i * w + j, h * w);
}

}  // namespace detail

Tensor augment_image(const Tensor& image, const SampleTransform& t, const AugmentOptions& options) {
  LOOM_CHECK(image.dim() == 3 && image.dtype() == kUInt8 && image.device().is_cpu(),
             "augment_image: expected a uint8 [height, width, channels] CPU tensor, got ",
             dtype_name(image.dtype()), " ", shape_str(image.shape()), " on ",
             image.device().str());
  const Tensor src = image.contiguous();
  const int64_t h = src.size(0), w = src.size(1), c = src.size(2);
  detail::check_augment_options(options, c);
  Tensor out = empty({c, h, w}, kFloat32);
  detail::warp_image_cpu(src.data_ptr<uint8_t>(), h, w, c, t.m, options, out.data_ptr<float>());
  return out;
}

Tensor augment_batch(const Tensor& images, const Tensor& transforms,
                     const AugmentOptions& options) {
  LOOM_CHECK(images.dim() == 4 && images.dtype() == kUInt8,
             "augment_batch: expected uint8 images [N, H, W, C], got ", dtype_name(images.dtype()),
             " ", shape_str(images.shape()));
  LOOM_CHECK(transforms.dim() == 2 && transforms.dtype() == kFloat64 &&
                 transforms.size(0) == images.size(0) && transforms.size(1) == 7,
             "augment_batch: expected float64 transforms [", images.size(0), ", 7], got ",
             dtype_name(transforms.dtype()), " ", shape_str(transforms.shape()));
  LOOM_CHECK(images.device() == transforms.device(), "augment_batch: images on ",
             images.device().str(), " but transforms on ", transforms.device().str());
  detail::check_augment_options(options, images.size(3));
  if (images.is_cuda()) {
    Tensor out;
    LOOM_CUDA_DISPATCH("augment_batch",
                       out = detail::augment_batch_cuda(images, transforms, options));
    return out;
  }
  const Tensor src = images.contiguous(), tr = transforms.contiguous();
  const int64_t n = src.size(0), h = src.size(1), w = src.size(2), c = src.size(3);
  Tensor out = empty({n, c, h, w}, kFloat32);
  const uint8_t* in = src.data_ptr<uint8_t>();
  const double* m = tr.data_ptr<double>();
  float* dst = out.data_ptr<float>();
  parallel_for(
      n,
      [&](int64_t s) {
        detail::warp_image_cpu(in + s * h * w * c, h, w, c, m + 7 * s, options,
                               dst + s * c * h * w);
      },
      1);
  return out;
}

}  // namespace loom::data
