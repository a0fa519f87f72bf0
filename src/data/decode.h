// Image decoding for the data pipeline: JPEG (libjpeg-turbo) and PNG (libpng) bytes to an 8-bit
// RGB image tensor, uint8 [height, width, 3], optionally resized to a target size. Bytes that
// are not a usable image throw BadSample naming the source; nothing crashes or hangs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/data/bad_input.h"
#include "loom/data/resize.h"
#include "loom/tensor/tensor.h"

namespace loom::data {

struct DecodeOptions {
  // Target size; 0 and 0 keep the decoded size. Keras: load_img(target_size=(height, width)).
  int64_t height = 0;
  int64_t width = 0;
  // Keras' load_img defaults to PIL's nearest; Bilinear and Area follow PIL's antialiased filters.
  Interpolation interpolation = Interpolation::Nearest;
  // Let libjpeg decode at 1/8..4/8 of the size (its DCT scaling) when the target is at most half
  // the source: much faster, and a better low-pass than nearest on the full image.
  bool dct_scaling = true;
  // Limits on what one file may cost, each checked before the allocation or the work it
  // bounds: photographs are downloaded, so they are hostile input. A file past a limit is a
  // BadSample naming it and the limit.
  // Declared width * height. Also caps the target size (which comes from a model file, itself
  // downloaded): past it, decode_image throws loom::Error before decoding.
  int64_t max_pixels = int64_t{1} << 26;  // 64 Mpixel, e.g. 8192 x 8192
  // Memory of one decode: the decoded pixels (height x width x channels as the decoder holds
  // them: 4 for CMYK, plus the RGB copy) and libjpeg's working memory (a progressive or
  // multi-scan JPEG keeps 2 bytes per pixel per component of coefficients).
  // 384 MiB: a 48 Mpixel 4:2:0 progressive JPEG (3 bytes a pixel of coefficients, 3 of RGB).
  int64_t max_decode_bytes = int64_t{384} << 20;
  // Scans of a progressive JPEG: each decodes the whole image again. libjpeg's own script
  // writes about 10; a crafted 374 KB file with 20,000 took 9 s.
  int max_jpeg_scans = 100;
  // Scans x declared pixels of a JPEG, its decoding work: about 1 ns each for an image's
  // cheapest scans, so 2^30 is about a second. A 24 Mpixel photograph of 10 scans is 2.4e8.
  int64_t max_decode_work = int64_t{1} << 30;
  // load_image: a larger file is refused before it is read.
  int64_t max_file_bytes = int64_t{128} << 20;
};

// Decodes by the magic bytes (JPEG: FF D8 FF, PNG: 89 'PNG' 0D 0A 1A 0A); `name` is the file or
// buffer's name for messages. Grayscale, palette, CMYK and alpha become RGB (alpha is dropped,
// as PIL's convert('RGB') does).
Tensor decode_image(const uint8_t* data, size_t size, const std::string& name,
                    const DecodeOptions& options = {});
Tensor decode_jpeg(const uint8_t* data, size_t size, const std::string& name,
                   const DecodeOptions& options = {});
Tensor decode_png(const uint8_t* data, size_t size, const std::string& name,
                  const DecodeOptions& options = {});
// Reads and decodes one file; a file that cannot be read (missing, not a regular file, over
// max_file_bytes) is a BadSample too. It reads through data/input_file.h: a FIFO or a device
// with a photograph's name is refused without blocking.
Tensor load_image(const std::string& path, const DecodeOptions& options = {});

// The libjpeg scale M/8 used for a source of src_h x src_w and a target of dst_h x dst_w: the
// smallest M in 1..4 whose scaled size ceil(src * M / 8) still covers the target in both
// dimensions, or 8 (no scaling) when the target is more than half the source.
int jpeg_scale_eighths(int64_t src_h, int64_t src_w, int64_t dst_h, int64_t dst_w);

namespace detail {
// Throws BadSample unless 0 < height, 0 < width and height * width <= options.max_pixels.
void check_declared_size(const std::string& name, const char* format, int64_t height, int64_t width,
                         const DecodeOptions& options);
// Throws BadSample unless height * width * bytes_per_pixel <= options.max_decode_bytes: the
// pixel buffers a decoder is about to allocate. Returns that product.
int64_t check_decoded_bytes(const std::string& name, const char* format, int64_t height,
                            int64_t width, int bytes_per_pixel, const DecodeOptions& options);
// Resizes a decoded image to the options' target size (itself when no target is set).
Tensor finish_decode(Tensor image, const DecodeOptions& options);
}  // namespace detail

}  // namespace loom::data
