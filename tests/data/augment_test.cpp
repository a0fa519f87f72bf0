// Keras-equivalent augmentation on the CPU: the affine maths against hand-computed maps of a
// linear pattern (flip, zoom, shear, rotation, shift, a composition, constant fill), the
// per-sample draws, normalisation, and the value range of augmented batches.
#include "loom/data/augment.h"

#include <algorithm>
#include <cmath>

#include "data_testing.h"

namespace loom::data {
namespace {

using testing::random_image;

// value(r, c) = 10 r + c: bilinear sampling reproduces it exactly at any point inside, so a
// sampling map can be read off the output.
Tensor linear_pattern(int64_t h, int64_t w) {
  Tensor t = empty({h, w, 1}, kUInt8);
  for (int64_t r = 0; r < h; ++r)
    for (int64_t c = 0; c < w; ++c)
      t.data_ptr<uint8_t>()[r * w + c] = static_cast<uint8_t>(10 * r + c);
  return t;
}

double clamp(double v, double hi) { return std::min(std::max(v, 0.0), hi); }

// Checks out[0, i, j] == 10 clamp(row(i, j)) + clamp(col(i, j)) for the hand-written map.
template <typename Map>
void expect_map(const Tensor& out, int64_t h, int64_t w, Map map) {
  const auto v = out.to_vector<double>();
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      double r, c;
      map(static_cast<double>(i), static_cast<double>(j), r, c);
      const double expected = 10 * clamp(r, h - 1) + clamp(c, w - 1);
      EXPECT_NEAR(v[i * w + j], expected, 1e-4) << "at (" << i << ", " << j << ")";
    }
}

Tensor warp(const Tensor& image, const AffineParams& p, const AugmentOptions& o = {}) {
  return augment_image(image, transform_matrix(p, image.size(0), image.size(1)), o);
}

TEST(Augment, IdentityIsExact) {
  const Tensor img = random_image(5, 7, 3, 1);
  const Tensor out = warp(img, AffineParams{});
  EXPECT_EQ(out.shape(), (Shape{3, 5, 7}));
  EXPECT_EQ(out.to_vector<int64_t>(), img.permute({2, 0, 1}).contiguous().to_vector<int64_t>());
}

TEST(Augment, PureFlipMirrorsColumns) {
  AffineParams p;
  p.flip = true;
  expect_map(warp(linear_pattern(6, 8), p), 6, 8,
             [](double i, double j, double& r, double& c) { r = i, c = 7 - j; });
}

TEST(Augment, PureZoomAboutKerasCentre) {
  // A square image's centre: (1.5, 1.5) for 4x4; zy zooms rows, zx columns: o + z (x - o).
  AffineParams p;
  p.zx = 2.0, p.zy = 0.5;
  expect_map(warp(linear_pattern(4, 4), p), 4, 4, [](double i, double j, double& r, double& c) {
    r = 1.5 + 0.5 * (i - 1.5), c = 1.5 + 2.0 * (j - 1.5);
  });
  // By hand: rows read 0.75 + i / 2 = 0.75, 1.25, 1.75, 2.25; columns read 2j - 1.5 = -1.5,
  // 0.5, 2.5, 4.5 -> clamped 0, 0.5, 2.5, 3. So out(2, 1) = 10 * 1.75 + 0.5.
  const auto v = warp(linear_pattern(4, 4), p).to_vector<double>();
  EXPECT_NEAR(v[2 * 4 + 1], 18.0, 1e-6);
  EXPECT_NEAR(v[3 * 4 + 3], 25.5, 1e-6);
}

TEST(Augment, NonSquareCentreIsKerasSwappedOne) {
  // Keras centres rows on w/2 - 0.5 and columns on h/2 - 0.5: (3.5, 1.5) for 4 rows x 8 columns.
  AffineParams p;
  p.zx = 0.5, p.zy = 0.75;
  expect_map(warp(linear_pattern(4, 8), p), 4, 8, [](double i, double j, double& r, double& c) {
    r = 3.5 + 0.75 * (i - 3.5), c = 1.5 + 0.5 * (j - 1.5);
  });
}

TEST(Augment, PureShearInDegrees) {
  // Keras 2: shear s degrees, [[cos s, 0], [-sin s, 1]] in (row, col) about (3.5, 3.5) of 8x8.
  AffineParams p;
  p.shear = 30.0;
  const double s = 0.5, co = std::sqrt(3.0) / 2;
  expect_map(warp(linear_pattern(8, 8), p), 8, 8, [&](double i, double j, double& r, double& c) {
    r = 3.5 + co * (i - 3.5), c = j - s * (i - 3.5);
  });
}

TEST(Augment, PureRotationAndShift) {
  AffineParams rot;
  rot.theta = 90.0;  // [[0, 1], [-1, 0]] about (3.5, 3.5): row = j, col = 7 - i
  expect_map(warp(linear_pattern(8, 8), rot), 8, 8,
             [](double i, double j, double& r, double& c) { r = j, c = 7 - i; });
  AffineParams shift;  // Keras' tx moves columns, ty rows
  shift.tx = 1.5, shift.ty = -2.0;
  expect_map(warp(linear_pattern(8, 8), shift), 8, 8,
             [](double i, double j, double& r, double& c) { r = i - 2.0, c = j + 1.5; });
}

TEST(Augment, CompositionOrderRotationThenZoom) {
  // T = C R Z C^-1: input = o + R (Z (x - o)), Z = diag(zy, zx).
  AffineParams p;
  p.theta = 30.0, p.zx = 1.2, p.zy = 0.9;
  const double cs = std::sqrt(3.0) / 2, sn = 0.5;
  expect_map(warp(linear_pattern(8, 8), p), 8, 8, [&](double i, double j, double& r, double& c) {
    r = 3.5 + cs * 0.9 * (i - 3.5) + sn * 1.2 * (j - 3.5);
    c = 3.5 - sn * 0.9 * (i - 3.5) + cs * 1.2 * (j - 3.5);
  });
}

TEST(Augment, ConstantFillOutsideTheImage) {
  AffineParams p;
  p.zx = p.zy = 2.0;  // 4x4: rows and cols read 2x - 1.5 = -1.5, 0.5, 2.5, 4.5: x = 1, 2 inside
  AugmentOptions o;
  o.fill_mode = FillMode::Constant;
  o.cval = 200;
  const auto v = warp(linear_pattern(4, 4), p, o).to_vector<double>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const bool inside = (i == 1 || i == 2) && (j == 1 || j == 2);
      EXPECT_NEAR(v[i * 4 + j], inside ? 10 * (2 * i - 1.5) + (2 * j - 1.5) : 200.0, 1e-9);
    }
}

TEST(Augment, NearestSamplingReadsWholePixels) {
  // A row shift of 0.4 rounds back onto the same pixel, 0.6 onto the next one; bilinear would
  // blend neighbours instead. Constant fill marks the row that falls outside.
  const Tensor img = random_image(6, 5, 2, 9);
  const auto in = img.to_vector<double>();
  AugmentOptions o;
  o.interpolation = WarpInterpolation::Nearest;
  o.fill_mode = FillMode::Constant;
  o.cval = 255;
  AffineParams p;
  p.ty = 0.4;  // Keras' ty moves rows
  EXPECT_EQ(warp(img, p, o).to_vector<int64_t>(),
            img.permute({2, 0, 1}).contiguous().to_vector<int64_t>());
  p.ty = 0.6;
  const auto v = warp(img, p, o).to_vector<double>();
  for (int64_t ch = 0; ch < 2; ++ch)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        const double expected = i + 1 < 6 ? in[((i + 1) * 5 + j) * 2 + ch] : 255.0;
        EXPECT_EQ(v[(ch * 6 + i) * 5 + j], expected)
            << "at (" << ch << ", " << i << ", " << j << ")";
      }
  o.interpolation = WarpInterpolation::Bilinear;
  EXPECT_NE(warp(img, p, o).to_vector<double>(), v);
}

TEST(Augment, TorchvisionSeedDrawsOneZoomForBothAxes) {
  const AugmentOptions o = AugmentOptions::torchvision_seed(5);
  EXPECT_EQ(o.fill_mode, FillMode::Constant);
  EXPECT_EQ(o.interpolation, WarpInterpolation::Nearest);
  double lowest = 2.0, highest = 0.0;
  for (int64_t i = 0; i < 2000; ++i) {
    const AffineParams p = draw_transform(o, 64, 64, 1, i);
    EXPECT_EQ(p.zx, p.zy);
    lowest = std::min(lowest, p.zx);
    highest = std::max(highest, p.zx);
    EXPECT_LE(std::fabs(p.shear), 0.2);
  }
  // torchvision's scale 0.8-1.2 is Keras zoom 1/1.2-1/0.8: both ends are reached.
  EXPECT_GE(lowest, 1.0 / 1.2);
  EXPECT_LT(lowest, 0.84);
  EXPECT_LE(highest, 1.0 / 0.8);
  EXPECT_GT(highest, 1.24);
}

TEST(Augment, RescaleAndNormalisation) {
  const Tensor img = random_image(3, 3, 2, 4);
  AugmentOptions o;
  o.rescale = 1.0 / 255.0;
  o.mean = {0.5, 0.25};
  o.std = {0.2, 0.5};
  const auto out = warp(img, AffineParams{}, o).to_vector<double>();
  const auto in = img.to_vector<double>();
  for (int ch = 0; ch < 2; ++ch)
    for (int p = 0; p < 9; ++p) {
      EXPECT_NEAR(out[ch * 9 + p], (in[p * 2 + ch] / 255.0 - o.mean[ch]) / o.std[ch], 1e-5);
    }
}

TEST(Augment, DrawsDependOnlyOnSeedEpochIndex) {
  const AugmentOptions o = AugmentOptions::keras_seed(42);
  int flips = 0;
  bool zx_differs_from_zy = false;
  for (int64_t i = 0; i < 2000; ++i) {
    const AffineParams p = draw_transform(o, 64, 64, 3, i);
    const AffineParams again = draw_transform(o, 64, 64, 3, i);
    EXPECT_EQ(p.zx, again.zx);
    EXPECT_EQ(p.shear, again.shear);
    EXPECT_EQ(p.flip, again.flip);
    EXPECT_GE(p.zx, 0.8);
    EXPECT_LE(p.zx, 1.2);
    EXPECT_GE(p.zy, 0.8);
    EXPECT_LE(p.zy, 1.2);
    EXPECT_LE(std::fabs(p.shear), 0.2);
    EXPECT_EQ(p.theta, 0.0);
    EXPECT_EQ(p.tx, 0.0);
    zx_differs_from_zy |= p.zx != p.zy;
    flips += p.flip;
  }
  EXPECT_TRUE(zx_differs_from_zy);
  EXPECT_NEAR(flips / 2000.0, 0.5, 0.05);
  EXPECT_NE(draw_transform(o, 64, 64, 3, 0).zx, draw_transform(o, 64, 64, 4, 0).zx);  // epoch
  EXPECT_NE(draw_transform(o, 64, 64, 3, 0).zx,
            draw_transform(AugmentOptions::keras_seed(43), 64, 64, 3, 0).zx);
  // Shifts below 1 are fractions of the size; rotation is in degrees.
  AugmentOptions s;
  s.height_shift_range = 0.25;
  s.width_shift_range = 3;
  s.rotation_range = 10;
  for (int64_t i = 0; i < 200; ++i) {
    const AffineParams p = draw_transform(s, 40, 80, 0, i);
    EXPECT_LE(std::fabs(p.tx), 10.0);
    EXPECT_LE(std::fabs(p.ty), 3.0);
    EXPECT_LE(std::fabs(p.theta), 10.0);
  }
}

TEST(Augment, BatchMatchesPerImageAndStaysInRange) {
  const int64_t n = 16, h = 32, w = 32;
  const AugmentOptions o = AugmentOptions::keras_seed(7);
  Tensor images = empty({n, h, w, 3}, kUInt8);
  Tensor transforms = empty({n, 7}, kFloat64);
  for (int64_t s = 0; s < n; ++s) {
    images.select(0, s).copy_(random_image(h, w, 3, 100 + s));
    const SampleTransform t = transform_matrix(draw_transform(o, h, w, 0, s), h, w);
    for (int k = 0; k < 7; ++k) transforms.data_ptr<double>()[7 * s + k] = t.m[k];
  }
  const Tensor out = augment_batch(images, transforms, o);
  ASSERT_EQ(out.shape(), (Shape{n, 3, h, w}));
  for (int64_t s = 0; s < n; ++s) {
    SampleTransform t;
    for (int k = 0; k < 7; ++k) t.m[k] = transforms.data_ptr<double>()[7 * s + k];
    EXPECT_TENSOR_NEAR(out.select(0, s), augment_image(images.select(0, s), t, o), 0, 0);
  }
  // rescale 1/255 keeps values in [0, 1]; a mild warp of noise keeps its mean.
  const auto v = out.to_vector<double>();
  const auto in = images.to_vector<double>();
  double mean_out = 0, mean_in = 0;
  for (double x : v) {
    EXPECT_GE(x, 0.0);
    EXPECT_LE(x, 1.0);
    mean_out += x / v.size();
  }
  for (double x : in) mean_in += x / 255.0 / in.size();
  EXPECT_NEAR(mean_out, mean_in, 0.02);
}

TEST(Augment, BadArguments) {
  const Tensor img = random_image(4, 4, 3, 5);
  AugmentOptions o;
  o.mean = {0.5};
  EXPECT_LOOM_ERROR(augment_image(img, SampleTransform{}, o), "mean has 1 values for 3 channels");
  o = {};
  o.std = {1, 0, 1};
  EXPECT_LOOM_ERROR(augment_image(img, SampleTransform{}, o), "std values must be positive");
  o = {};
  o.zoom_low = 1.5, o.zoom_high = 1.2;
  EXPECT_LOOM_ERROR(augment_image(img, SampleTransform{}, o), "zoom range [1.5, 1.2]");
  o = {};
  o.shear_range = -1;
  EXPECT_LOOM_ERROR(augment_image(img, SampleTransform{}, o), "ranges must be non-negative");
  EXPECT_LOOM_ERROR(augment_image(random_image(4, 4, 5, 1), SampleTransform{}, {}),
                    "1 to 4 channels, got 5");
  EXPECT_LOOM_ERROR(augment_image(zeros({4, 4, 3}), SampleTransform{}, {}), "expected a uint8");
  EXPECT_LOOM_ERROR(augment_batch(img, zeros({1, 7}, kFloat64), {}),
                    "expected uint8 images [N, H, W, C]");
  EXPECT_LOOM_ERROR(augment_batch(img.unsqueeze(0), zeros({2, 7}, kFloat64), {}),
                    "expected float64 transforms [1, 7]");
}

}  // namespace
}  // namespace loom::data
