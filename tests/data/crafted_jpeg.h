// Crafted JPEGs for the decoder tests and the fuzzer's seed corpus: libjpeg's own progressive
// files (loom's encoder writes baseline ones only), and such a file with its last scan repeated.
#pragma once

#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

// jpeglib.h needs size_t and FILE declared before it.
// clang-format off
#include <jpeglib.h>
// clang-format on

namespace loom::data {

// uint8 [h, w, 3] (RGB) or [h, w, 4] (CMYK) as a progressive JPEG with libjpeg's standard scan
// script (loom's encoder writes baseline files only).
inline std::vector<uint8_t> progressive_jpeg(const Tensor& image, int quality = 90) {
  const Tensor src = image.contiguous();
  const int channels = static_cast<int>(src.size(2));
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);  // the test's own well-formed input: libjpeg's exit() is fine
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(src.size(1));
  cinfo.image_height = static_cast<JDIMENSION>(src.size(0));
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const uint8_t* pixels = src.data_ptr<uint8_t>();
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row =
        const_cast<uint8_t*>(pixels) + int64_t{cinfo.next_scanline} * src.size(1) * channels;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes(buffer, buffer + size);
  std::free(buffer);
  return bytes;
}

// Each scan's bytes: from the end of the previous scan's data (so the tables defined for it
// come along) through its own entropy-coded data; `eoi` is the EOI marker's offset.
struct Scan {
  size_t begin, end;
};

inline std::vector<Scan> find_scans(const std::vector<uint8_t>& j, size_t& eoi) {
  std::vector<Scan> scans;
  size_t pos = 2, chunk = 2;
  while (pos + 3 < j.size() && j[pos] == 0xFF && j[pos + 1] != 0xD9) {
    const uint8_t marker = j[pos + 1];
    pos += 2 + ((size_t{j[pos + 2]} << 8) | j[pos + 3]);
    if (marker != 0xDA) continue;
    // Entropy-coded data runs to the next marker that is neither a stuffed 0xFF00 nor RSTn.
    while (!(j[pos] == 0xFF && j[pos + 1] != 0x00 && (j[pos + 1] < 0xD0 || j[pos + 1] > 0xD7)))
      ++pos;
    scans.push_back({chunk, pos});
    chunk = pos;
  }
  eoi = pos;
  return scans;
}

// `jpeg` with its last scan repeated until the file has `scans` scans. libjpeg decodes every
// repeat again, only warning of a bogus progression; in a solid image every repeat is a few
// bytes that decode the same each time (nothing but end-of-band runs).
inline std::vector<uint8_t> with_scans(const std::vector<uint8_t>& jpeg, int scans) {
  size_t eoi = 0;
  const std::vector<Scan> found = find_scans(jpeg, eoi);
  LOOM_ASSERT(!found.empty() && scans >= static_cast<int>(found.size()) && eoi + 2 == jpeg.size());
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(eoi));
  for (int i = static_cast<int>(found.size()); i < scans; ++i) {
    out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(found.back().begin),
               jpeg.begin() + static_cast<std::ptrdiff_t>(found.back().end));
  }
  out.insert(out.end(), {0xFF, 0xD9});
  return out;
}

}  // namespace loom::data
