// Encoding uint8 HWC images to JPEG and PNG bytes: for saving augmented samples to look at, and
// for the tests and the fuzzer's seed corpus, which make their own small image files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::data {

// image: uint8 [height, width, channels] on the CPU. channels 1 = grayscale, 3 = RGB, 4 = CMYK
// bytes written as given (Adobe's inverted convention, the one decode_jpeg reads).
std::vector<uint8_t> encode_jpeg(const Tensor& image, int quality = 90);
// channels 1 = gray, 2 = gray + alpha, 3 = RGB, 4 = RGBA.
std::vector<uint8_t> encode_png(const Tensor& image);
// Writes bytes to path; throws loom::Error naming the path when it cannot.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

namespace detail {
// Checks an image tensor for the encoders and returns it contiguous.
Tensor check_encodable(const Tensor& image, const char* op, int max_channels);
}  // namespace detail

}  // namespace loom::data
