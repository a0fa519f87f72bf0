// JPEG decoding (and encoding, which shares the error handling) through libjpeg(-turbo). libjpeg
// reports errors by a callback that must not return, so it longjmps back to decode_jpeg; everything
// that must survive the jump lives on the heap (JpegState), and no C++ object with a destructor is
// created between setjmp and the calls that may jump.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <memory>

// jpeglib.h needs size_t and FILE declared before it, and jerror.h needs jpeglib.h.
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "loom/data/decode.h"
#include "loom/data/encode.h"

namespace loom::data {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool over_limit = false;  // `message` is one of loom's limits, not libjpeg's complaint
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Warnings are silent (extraneous bytes before a marker are common in real photographs), except
// missing image data: a premature end of file or of a scan. libjpeg would pad the rest of the
// image with grey, where PIL (and so Keras) refuses a truncated file.
void on_message(j_common_ptr cinfo, int level) {
  const int code = cinfo->err->msg_code;
  if (level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER)) on_error(cinfo);
}

// libjpeg calls the progress monitor before each row of each scan it reads, which is where the
// scan count and the work (scans x pixels) are checked: a crafted progressive file can repeat
// a scan thousands of times, each one decoding the whole image again.
struct ScanLimits {
  jpeg_progress_mgr pub;
  int max_scans;
  int64_t max_work;
};

void on_progress(j_common_ptr common) {
  auto* cinfo = reinterpret_cast<j_decompress_ptr>(common);
  const auto* limits = reinterpret_cast<const ScanLimits*>(cinfo->progress);
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  const int scans = cinfo->input_scan_number;
  const int64_t pixels = int64_t{cinfo->image_width} * cinfo->image_height;
  // snprintf, not a std::string: nothing with a destructor may live across the longjmp.
  if (scans > limits->max_scans) {
    std::snprintf(err->message, sizeof(err->message),
                  "JPEG has more than %d scans (DecodeOptions::max_jpeg_scans; a normal "
                  "progressive file has about 10)",
                  limits->max_scans);
  } else if (scans * pixels > limits->max_work) {
    std::snprintf(err->message, sizeof(err->message),
                  "JPEG needs more decoding work than its size warrants: %d scans of %ux%u pixels "
                  "are over the limit of %lld pixel-scans (DecodeOptions::max_decode_work)",
                  scans, cinfo->image_width, cinfo->image_height,
                  static_cast<long long>(limits->max_work));
  } else {
    return;
  }
  err->over_limit = true;
  longjmp(err->jump, 1);
}

struct JpegState {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  ScanLimits limits{};
  Tensor pixels;  // here, not a local: a local assigned after setjmp is unspecified after a jump
  bool created = false;
  ~JpegState() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

// Adobe CMYK JPEGs (what Photoshop and libjpeg write) store inverted ink, so the RGB value is
// simply channel * K / 255, as PIL's CMYK->RGB conversion computes.
void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, int64_t pixels) {
  for (int64_t i = 0; i < pixels; ++i) {
    const int k = cmyk[4 * i + 3];
    for (int c = 0; c < 3; ++c)
      rgb[3 * i + c] = static_cast<uint8_t>((cmyk[4 * i + c] * k + 127) / 255);
  }
}

struct JpegWriteState {
  jpeg_compress_struct cinfo{};
  ErrorManager err{};
  unsigned char* buffer = nullptr;  // from jpeg_mem_dest (malloc)
  unsigned long size = 0;
  bool created = false;
  ~JpegWriteState() {
    if (created) jpeg_destroy_compress(&cinfo);
    std::free(buffer);
  }
};

}  // namespace

std::vector<uint8_t> encode_jpeg(const Tensor& image, int quality) {
  const Tensor src = detail::check_encodable(image, "encode_jpeg", 4);
  const int channels = static_cast<int>(src.size(2));
  LOOM_CHECK(channels != 2, "encode_jpeg: 2 channels (gray + alpha) cannot be stored as JPEG");
  LOOM_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality must be in 1..100, got ",
             quality);
  auto state = std::make_unique<JpegWriteState>();
  jpeg_compress_struct* cinfo = &state->cinfo;
  cinfo->err = jpeg_std_error(&state->err.pub);
  state->err.pub.error_exit = on_error;
  if (setjmp(state->err.jump)) {
    LOOM_FAIL("encode_jpeg: libjpeg failed: ", state->err.message);
  }
  jpeg_create_compress(cinfo);
  state->created = true;
  jpeg_mem_dest(cinfo, &state->buffer, &state->size);
  cinfo->image_width = static_cast<JDIMENSION>(src.size(1));
  cinfo->image_height = static_cast<JDIMENSION>(src.size(0));
  cinfo->input_components = channels;
  cinfo->in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, quality, TRUE);
  jpeg_start_compress(cinfo, TRUE);
  const uint8_t* pixels = src.data_ptr<uint8_t>();
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels) +
                   static_cast<int64_t>(cinfo->next_scanline) * src.size(1) * channels;
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  return std::vector<uint8_t>(state->buffer, state->buffer + state->size);
}

Tensor decode_jpeg(const uint8_t* data, size_t size, const std::string& name,
                   const DecodeOptions& options) {
  auto state = std::make_unique<JpegState>();
  jpeg_decompress_struct* cinfo = &state->cinfo;
  cinfo->err = jpeg_std_error(&state->err.pub);
  state->err.pub.error_exit = on_error;
  state->err.pub.emit_message = on_message;
  if (setjmp(state->err.jump)) {
    const int code = state->err.pub.msg_code;
    if (state->err.over_limit)
      throw BadSample(::loom::detail::concat(name, ": ", state->err.message));
    if (code == JERR_NO_BACKING_STORE || code == JERR_OUT_OF_MEMORY) {
      // libjpeg ran into max_memory_to_use (its coefficient buffer would not fit).
      throw BadSample(::loom::detail::concat(
          name, ": JPEG needs more decoder memory than the limit of ", options.max_decode_bytes,
          " bytes (DecodeOptions::max_decode_bytes)"));
    }
    throw BadSample(
        ::loom::detail::concat(name, ": not a readable JPEG (", state->err.message, ")"));
  }
  jpeg_create_decompress(cinfo);
  state->created = true;
  state->limits.pub.progress_monitor = on_progress;
  state->limits.max_scans = options.max_jpeg_scans;
  state->limits.max_work = options.max_decode_work;
  cinfo->progress = &state->limits.pub;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  detail::check_declared_size(name, "JPEG", cinfo->image_height, cinfo->image_width, options);

  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;  // libjpeg expands grayscale to RGB itself
  if (options.dct_scaling) {
    cinfo->scale_num =
        jpeg_scale_eighths(cinfo->image_height, cinfo->image_width, options.height, options.width);
    cinfo->scale_denom = 8;
  }
  jpeg_calc_output_dimensions(cinfo);
  // The output buffer (and the RGB copy of CMYK) out of the memory limit, the rest for libjpeg,
  // which fails rather than allocate past max_memory_to_use (it has no backing store).
  const int64_t output_bytes = detail::check_decoded_bytes(
      name, "JPEG", cinfo->output_height, cinfo->output_width, cmyk ? 4 + 3 : 3, options);
  cinfo->mem->max_memory_to_use =
      std::max<long>(static_cast<long>(options.max_decode_bytes - output_bytes), 1);
  jpeg_start_decompress(cinfo);
  const int64_t h = cinfo->output_height, w = cinfo->output_width;
  const int channels = cinfo->output_components;
  LOOM_ASSERT(channels == (cmyk ? 4 : 3), "libjpeg gave ", channels, " components");
  state->pixels = empty({h, w, channels}, kUInt8);
  uint8_t* pixels = state->pixels.data_ptr<uint8_t>();
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = pixels + static_cast<int64_t>(cinfo->output_scanline) * w * channels;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  if (!cmyk) return detail::finish_decode(state->pixels, options);
  Tensor rgb = empty({h, w, 3}, kUInt8);
  cmyk_to_rgb(pixels, rgb.data_ptr<uint8_t>(), h * w);
  return detail::finish_decode(rgb, options);
}

}  // namespace loom::data
