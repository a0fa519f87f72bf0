// Format sniffing, file reading, the size guard and the final resize shared by both decoders.
#include "data/decode.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace loom::data {

namespace detail {

void check_declared_size(const std::string& name, const char* format, int64_t height,
                         int64_t width, const DecodeOptions& options) {
  if (height <= 0 || width <= 0) {
    throw BadSample(::loom::detail::concat(name, ": ", format, " declares an empty image (", width, "x", height, ")"));
  }
  if (height > options.max_pixels / width) {
    throw BadSample(::loom::detail::concat(name, ": ", format, " declares ", width, "x", height,
                           " pixels, over the limit of ", options.max_pixels,
                           " (DecodeOptions::max_pixels)"));
  }
}

Tensor finish_decode(Tensor image, const DecodeOptions& options) {
  if (options.height == 0 && options.width == 0) return image;
  return resize_image(image, options.height, options.width, options.interpolation);
}

}  // namespace detail

int jpeg_scale_eighths(int64_t src_h, int64_t src_w, int64_t dst_h, int64_t dst_w) {
  if (dst_h <= 0 || dst_w <= 0 || 2 * dst_h > src_h || 2 * dst_w > src_w) return 8;
  for (int m = 1; m <= 4; ++m) {
    // libjpeg's scaled size is ceil(src * m / 8).
    if ((src_h * m + 7) / 8 >= dst_h && (src_w * m + 7) / 8 >= dst_w) return m;
  }
  return 4;
}

Tensor decode_image(const uint8_t* data, size_t size, const std::string& name,
                    const DecodeOptions& options) {
  LOOM_CHECK((options.height == 0) == (options.width == 0) && options.height >= 0 && options.width >= 0,
             "decode_image: target size must be both positive or both 0, got ", options.height, "x",
             options.width);
  LOOM_CHECK(options.max_pixels > 0, "decode_image: max_pixels must be positive, got ", options.max_pixels);
  if (size == 0) throw BadSample(::loom::detail::concat(name, ": empty file (0 bytes)"));
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    return decode_jpeg(data, size, name, options);
  }
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return decode_png(data, size, name, options);
  throw BadSample(::loom::detail::concat(name, ": neither a JPEG nor a PNG (", size, " bytes, unknown signature)"));
}

Tensor load_image(const std::string& path, const DecodeOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadSample(::loom::detail::concat(path, ": cannot open the file for reading"));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw BadSample(::loom::detail::concat(path, ": read error"));
  return decode_image(bytes.data(), bytes.size(), path, options);
}

}  // namespace loom::data
