// Resizing of uint8 HWC images, following PIL's Image.resize so that loom's inputs match what
// Keras' load_img(target_size=...) gives: nearest, and the antialiased bilinear and box filters.
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom::data {

enum class Interpolation {
  Nearest,   // PIL NEAREST (Keras' default): source pixel floor((x + 0.5) * src / dst)
  Bilinear,  // PIL BILINEAR: a triangle filter widened by the scale when shrinking
  Area,      // PIL BOX: the average of the source pixels each output pixel covers
};

const char* interpolation_name(Interpolation interpolation);

// image: uint8 [height, width, channels] on the CPU; returns uint8 [dst_h, dst_w, channels].
Tensor resize_image(const Tensor& image, int64_t dst_h, int64_t dst_w, Interpolation interpolation);

}  // namespace loom::data
