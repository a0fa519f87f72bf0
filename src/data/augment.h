// Keras-equivalent random augmentation (ImageDataGenerator: rotation, shifts, shear in degrees,
// per-axis zoom, horizontal flip, fill_mode nearest/constant, rescale, mean/std normalisation).
// Each sample's draw depends only on (seed, epoch, index), never on which thread runs it, and
// the warp is one formula shared by the CPU and the GPU (augment_kernel.h).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::data {

enum class FillMode { Nearest, Constant };
// How the warp reads between pixels: Keras (scipy order=1) is bilinear; torchvision's
// RandomAffine defaults to nearest, which keeps the image as sharp as the unwarped one.
enum class WarpInterpolation { Bilinear, Nearest };

struct AugmentOptions {
  double rescale = 1.0;             // Keras rescale: 1/255 maps bytes to [0, 1]
  double rotation_range = 0.0;      // degrees: theta uniform in [-r, r]
  double width_shift_range = 0.0;   // below 1: a fraction of the width, else pixels
  double height_shift_range = 0.0;  // below 1: a fraction of the height, else pixels
  double shear_range = 0.0;         // degrees (Keras 2): shear uniform in [-s, s]
  double zoom_low = 1.0;            // zx and zy drawn independently in [zoom_low, zoom_high]
  double zoom_high = 1.0;
  bool isotropic_zoom = false;  // one factor for both axes (torchvision's scale) instead
  bool horizontal_flip = false;
  FillMode fill_mode = FillMode::Nearest;                         // Keras' default
  WarpInterpolation interpolation = WarpInterpolation::Bilinear;  // Keras' order=1
  double cval = 0.0;         // Constant fill, in input units (before rescale)
  std::vector<double> mean;  // per channel, after rescale; empty for none
  std::vector<double> std;   // per channel, after rescale; empty for none
  uint64_t seed = 0;

  // Keras' zoom_range=z: [1 - z, 1 + z].
  AugmentOptions& zoom_range(double z) {
    zoom_low = 1.0 - z;
    zoom_high = 1.0 + z;
    return *this;
  }
  // The seed program's generator: rescale=1/255, shear_range=0.2, zoom_range=0.2, flip.
  static AugmentOptions keras_seed(uint64_t seed);
  // The same generator as PyTorch users write it (RandomAffine(degrees=0, shear=0.2,
  // scale=(0.8, 1.2)) then RandomHorizontalFlip): one zoom for both axes, zero fill, nearest
  // sampling. It trains the seed CNN about half a point better than Keras' semantics do
  // (docs/benchmarks.md).
  static AugmentOptions torchvision_seed(uint64_t seed);
};

// One sample's random draw, as Keras' get_random_transform defines it. The names are Keras':
// tx is drawn from height_shift_range (times the height) yet, as in Keras, moves the image along
// its columns; ty and width_shift_range likewise move it along the rows.
struct AffineParams {
  double theta = 0.0;  // degrees
  double tx = 0.0;     // pixels, along the columns
  double ty = 0.0;     // pixels, along the rows
  double shear = 0.0;  // degrees
  double zx = 1.0;     // column-axis zoom
  double zy = 1.0;     // row-axis zoom
  bool flip = false;   // horizontal flip, applied after the affine warp
};

// The draw for sample `index` of `epoch` of an image of height x width.
AffineParams draw_transform(const AugmentOptions& options, int64_t height, int64_t width,
                            int64_t epoch, int64_t index);

// The sampling map of one sample: output pixel (i, j) reads input (row, col) =
// (m[0] i + m[1] j' + m[2], m[3] i + m[4] j' + m[5]) with j' = w - 1 - j when flip (m[6] = 1)
// else j. Keras (tf.keras 2.x, keras-preprocessing >= 1.1.2) builds T = C R S Sh Z C^-1 in
// (x, y) order and applies P T P to the (row, col) image, P swapping the axes. In (row, col):
//   R = [[cos t, sin t], [-sin t, cos t]], S = shift by (ty, tx), Sh = [[cos s, 0], [-sin s, 1]],
//   Z = diag(zy, zx), C = shift by (w/2 - 0.5, h/2 - 0.5)
// (the true centre of a square image; Keras swaps h and w there, kept for equivalence), and
// scipy.ndimage.affine_transform(order=1) reads input = T (output). tests/reference checks this
// against Keras' own ImageDataGenerator.apply_transform.
struct SampleTransform {
  double m[7] = {1, 0, 0, 0, 1, 0, 0};
};
SampleTransform transform_matrix(const AffineParams& params, int64_t height, int64_t width);

// Warps uint8 [H, W, C] into float [C, H, W]: bilinear sampling by `t`, fill, then
// (value * rescale - mean[c]) / std[c].
Tensor augment_image(const Tensor& image, const SampleTransform& t, const AugmentOptions& options);

// A batch: images uint8 [N, H, W, C] and transforms float64 [N, 7] (SampleTransform::m rows), on
// the CPU or one CUDA device (both on the same); returns float32 [N, C, H, W] there.
Tensor augment_batch(const Tensor& images, const Tensor& transforms, const AugmentOptions& options);

namespace detail {
void check_augment_options(const AugmentOptions& options, int64_t channels);
// The CPU warp of one sample into out[C * H * W].
void warp_image_cpu(const uint8_t* image, int64_t h, int64_t w, int64_t c, const double* m,
                    const AugmentOptions& options, float* out);
Tensor augment_batch_cuda(const Tensor& images, const Tensor& transforms,
                          const AugmentOptions& options);
}  // namespace detail

}  // namespace loom::data
