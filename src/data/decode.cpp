// Format sniffing, file reading, the size guards and the final resize shared by both decoders.
#include "loom/data/decode.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "loom/data/input_file.h"

namespace loom::data {

namespace detail {

void check_declared_size(const std::string& name, const char* format, int64_t height, int64_t width,
                         const DecodeOptions& options) {
  if (height <= 0 || width <= 0) {
    throw BadSample(::loom::detail::concat(name, ": ", format, " declares an empty image (", width,
                                           "x", height, ")"));
  }
  if (height > options.max_pixels / width) {
    throw BadSample(::loom::detail::concat(name, ": ", format, " declares ", width, "x", height,
                                           " pixels, over the limit of ", options.max_pixels,
                                           " (DecodeOptions::max_pixels)"));
  }
}

int64_t check_decoded_bytes(const std::string& name, const char* format, int64_t height,
                            int64_t width, int bytes_per_pixel, const DecodeOptions& options) {
  // height * width <= max_pixels already, so the product cannot overflow.
  const int64_t bytes = height * width * bytes_per_pixel;
  if (bytes > options.max_decode_bytes) {
    throw BadSample(::loom::detail::concat(
        name, ": ", format, " of ", width, "x", height, " pixels needs ", bytes,
        " bytes to decode (", bytes_per_pixel, " per pixel), over the limit of ",
        options.max_decode_bytes, " (DecodeOptions::max_decode_bytes)"));
  }
  return bytes;
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
  LOOM_CHECK(
      (options.height == 0) == (options.width == 0) && options.height >= 0 && options.width >= 0,
      "decode_image: target size must be both positive or both 0, got ", options.height, "x",
      options.width);
  const std::pair<const char*, int64_t> limits[] = {{"max_pixels", options.max_pixels},
                                                    {"max_decode_bytes", options.max_decode_bytes},
                                                    {"max_jpeg_scans", options.max_jpeg_scans},
                                                    {"max_decode_work", options.max_decode_work}};
  for (const auto& [limit, value] : limits) {
    LOOM_CHECK(value > 0, "decode_image: ", limit, " must be positive, got ", value);
  }
  LOOM_CHECK(options.height <= options.max_pixels / std::max<int64_t>(options.width, 1),
             "decode_image: target size ", options.height, "x", options.width,
             " is over the limit of ", options.max_pixels, " pixels (DecodeOptions::max_pixels)");
  if (size == 0) throw BadSample(::loom::detail::concat(name, ": empty file (0 bytes)"));
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    return decode_jpeg(data, size, name, options);
  }
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return decode_png(data, size, name, options);
  throw BadSample(::loom::detail::concat(name, ": neither a JPEG nor a PNG (", size,
                                         " bytes, unknown signature)"));
}

Tensor load_image(const std::string& path, const DecodeOptions& options) {
  LOOM_CHECK(options.max_file_bytes > 0, "load_image: max_file_bytes must be positive, got ",
             options.max_file_bytes);
  std::string bytes;
  try {
    bytes = read_input_file(path, static_cast<uint64_t>(options.max_file_bytes),
                            "DecodeOptions::max_file_bytes");
  } catch (const Error& e) {
    throw BadSample(e.what());  // the loader skips an unreadable file as it skips a corrupt one
  }
  return decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path, options);
}

}  // namespace loom::data
