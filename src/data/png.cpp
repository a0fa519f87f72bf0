// PNG decoding (and encoding, which shares the error handling) through libpng. Like libjpeg, libpng
// reports errors by longjmp; the decoder's state lives on the heap (PngState) so that it is intact
// after the jump. Bad CRCs in critical chunks are errors (libpng's default); truncated data is an
// error, never a short read.
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "loom/data/decode.h"
#include "loom/data/encode.h"

namespace loom::data {
namespace {

struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char message[256] = {0};
  Tensor pixels;
  std::vector<png_bytep> rows;
  ~PngState() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void read_bytes(png_structp png, png_bytep out, size_t length) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (length > state->size - state->pos) png_error(png, "truncated PNG data");
  std::memcpy(out, state->data + state->pos, length);
  state->pos += length;
}

void write_bytes(png_structp png, png_bytep data, size_t length) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + length);
}

void flush_nothing(png_structp) {}

struct PngWriteState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  char message[256] = {0};
  std::vector<uint8_t> bytes;
  std::vector<png_bytep> rows;
  ~PngWriteState() {
    if (png) png_destroy_write_struct(&png, info ? &info : nullptr);
  }
};

[[noreturn]] void on_write_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngWriteState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  png_longjmp(png, 1);
}

}  // namespace

std::vector<uint8_t> encode_png(const Tensor& image) {
  const Tensor src = detail::check_encodable(image, "encode_png", 4);
  const int64_t h = src.size(0), w = src.size(1), channels = src.size(2);
  static const int kColorType[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                    PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  auto state = std::make_unique<PngWriteState>();
  state->png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, state.get(), on_write_error, on_warning);
  LOOM_CHECK(state->png != nullptr, "encode_png: libpng could not start (out of memory?)");
  state->info = png_create_info_struct(state->png);
  LOOM_CHECK(state->info != nullptr, "encode_png: libpng could not start (out of memory?)");
  state->rows.resize(static_cast<size_t>(h));
  uint8_t* pixels = const_cast<uint8_t*>(src.data_ptr<uint8_t>());
  for (int64_t y = 0; y < h; ++y) state->rows[y] = pixels + y * w * channels;
  if (setjmp(png_jmpbuf(state->png))) {
    LOOM_FAIL("encode_png: libpng failed: ", state->message);
  }
  png_set_write_fn(state->png, &state->bytes, write_bytes, flush_nothing);
  png_set_IHDR(state->png, state->info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8,
               kColorType[channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(state->png, state->info);
  png_write_image(state->png, state->rows.data());
  png_write_end(state->png, nullptr);
  return std::move(state->bytes);
}

Tensor decode_png(const uint8_t* data, size_t size, const std::string& name,
                  const DecodeOptions& options) {
  auto state = std::make_unique<PngState>();
  state->data = data;
  state->size = size;
  state->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, state.get(), on_error, on_warning);
  LOOM_CHECK(state->png != nullptr, "decode_png: libpng could not start (out of memory?)");
  state->info = png_create_info_struct(state->png);
  LOOM_CHECK(state->info != nullptr, "decode_png: libpng could not start (out of memory?)");
  if (setjmp(png_jmpbuf(state->png))) {
    throw BadSample(::loom::detail::concat(name, ": not a readable PNG (", state->message, ")"));
  }
  png_structp png = state->png;
  png_infop info = state->info;
  png_set_read_fn(png, state.get(), read_bytes);
  // Every ancillary chunk but tRNS is skipped unread: the pixels need none of them (no colour
  // management, as in PIL's convert('RGB')), and compressed text or ICC chunks are a way to
  // make a small file inflate gigabytes.
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  png_read_info(png, info);
  const int64_t h = png_get_image_height(png, info), w = png_get_image_width(png, info);
  detail::check_declared_size(name, "PNG", h, w, options);
  detail::check_decoded_bytes(name, "PNG", h, w, 3, options);

  // Everything to 8-bit RGB: palette and low-bit gray expand, 16-bit strips, alpha is dropped
  // (PIL's convert('RGB') drops it too), gray is replicated.
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  LOOM_ASSERT(png_get_rowbytes(png, info) == static_cast<size_t>(w) * 3, "libpng row of ",
              png_get_rowbytes(png, info), " bytes for width ", w);
  state->pixels = empty({h, w, 3}, kUInt8);
  state->rows.resize(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; ++y) state->rows[y] = state->pixels.data_ptr<uint8_t>() + y * w * 3;
  png_read_image(png, state->rows.data());
  return detail::finish_decode(state->pixels, options);
}

}  // namespace loom::data
