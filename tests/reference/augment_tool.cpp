// A driver for the Keras augmentation check: `augment_tool IN OUT` reads "images" uint8
// [N, H, W, C], "params" float64 [N, 7] (theta, tx, ty, shear, zx, zy, flip) and the metadata
// "fill_mode" (nearest|constant) and "cval" from IN, warps each image with transform_matrix and
// augment_image (rescale 1, bilinear) and writes "out" float32 [N, C, H, W] to OUT.
#include <loom/loom.h>

#include <cstdio>
#include <string>

#include "loom/data/augment.h"
#include "loom/io/safetensors.h"

int main(int argc, char** argv) try {
  if (argc != 3) throw loom::Error("usage: augment_tool IN OUT");
  const loom::io::TensorFile file = loom::io::load_safetensors(argv[1]);
  const loom::Tensor images = file.at("images").contiguous();
  const loom::Tensor params = file.at("params").contiguous();
  LOOM_CHECK(images.dim() == 4 && images.dtype() == loom::kUInt8,
             "images must be uint8 [N, H, W, C], got ", loom::dtype_name(images.dtype()), " ",
             loom::shape_str(images.shape()));
  const int64_t n = images.size(0), h = images.size(1), w = images.size(2), c = images.size(3);
  LOOM_CHECK(params.dim() == 2 && params.dtype() == loom::kFloat64 && params.size(0) == n &&
                 params.size(1) == 7,
             "params must be float64 [", n, ", 7], got ", loom::dtype_name(params.dtype()), " ",
             loom::shape_str(params.shape()));

  loom::data::AugmentOptions options;
  options.interpolation = loom::data::WarpInterpolation::Bilinear;
  const auto fill = file.metadata.find("fill_mode");
  LOOM_CHECK(fill != file.metadata.end(), "metadata fill_mode is missing");
  LOOM_CHECK(fill->second == "nearest" || fill->second == "constant",
             "fill_mode must be nearest or constant, got ", fill->second);
  if (fill->second == "constant") options.fill_mode = loom::data::FillMode::Constant;
  const auto cval = file.metadata.find("cval");
  if (cval != file.metadata.end()) options.cval = std::stod(cval->second);

  const double* p = params.data_ptr<double>();
  loom::Tensor out = loom::empty({n, c, h, w}, loom::kFloat32);
  for (int64_t s = 0; s < n; ++s) {
    const double* q = p + 7 * s;
    loom::data::AffineParams a;  // theta, tx, ty, shear, zx, zy, flip
    a.theta = q[0], a.tx = q[1], a.ty = q[2], a.shear = q[3];
    a.zx = q[4], a.zy = q[5], a.flip = q[6] != 0.0;
    const loom::data::SampleTransform t = loom::data::transform_matrix(a, h, w);
    const loom::Tensor warped =
        loom::data::augment_image(images.select(0, s), t, options).contiguous();
    out.select(0, s).copy_(warped);
  }
  loom::io::save_safetensors(argv[2], {{"out", out}});
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "augment_tool: %s\n", e.what());
  return 2;
}
