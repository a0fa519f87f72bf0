// libFuzzer target for the image decoders: any bytes must give an image or a loom::Error, never a
// crash, a hang or a sanitizer report. Seed corpus: tests/data/fuzz_corpus_test.cpp writes it.
#include <cstddef>
#include <cstdint>

#include "loom/data/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::data;
  DecodeOptions options;
  options.max_pixels = int64_t{1} << 22;  // keeps each input's memory far below the RSS limit
  try {
    decode_image(data, size, "fuzz", options);
  } catch (const loom::Error&) {
  }
  // Again through the down-scaling and resampling paths.
  options.height = 13;
  options.width = 17;
  options.interpolation = size % 2 ? Interpolation::Bilinear : Interpolation::Area;
  try {
    decode_image(data, size, "fuzz", options);
  } catch (const loom::Error&) {
  }
  return 0;
}
