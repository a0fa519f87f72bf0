// The decoders' resource limits against crafted files: a progressive JPEG whose scans repeat
// thousands of times (each re-decodes the whole image), more decoding work than an image's
// size warrants, decoder memory, compressed PNG text chunks, and a target size too large to
// allocate. Each must end within 2 s and 512 MB (the hostile ones run in a bounded child), in
// an error naming the file and the limit, never in a long decode or a huge allocation.
#include <zlib.h>

#include <cstdlib>

#include "bounded_child.h"
#include "crafted_jpeg.h"
#include "data_testing.h"
#include "loom/data/decode.h"
#include "loom/data/encode.h"

namespace loom::data {
namespace {

using testing::solid_image;

Tensor decode(const std::vector<uint8_t>& bytes, const std::string& name,
              const DecodeOptions& options = {}) {
  return decode_image(bytes.data(), bytes.size(), name, options);
}

// ---- scans and decoding work ----------------------------------------------------------------

TEST(DecodeLimits, NormalProgressiveJpegDecodes) {
  const std::vector<uint8_t> bytes = progressive_jpeg(solid_image(64, 48, 3, 120));
  size_t eoi = 0;
  ASSERT_EQ(find_scans(bytes, eoi).size(), 10u);
  const Tensor image = decode(bytes, "progressive.jpg");
  EXPECT_EQ(image.shape(), (Shape{64, 48, 3}));
  for (int64_t v : image.to_vector<int64_t>()) EXPECT_NEAR(v, 120, 2);
  // Repeats of a scan decode the same image: the crafted files below are valid otherwise.
  EXPECT_EQ(decode(with_scans(bytes, 40), "forty.jpg").to_vector<int64_t>(),
            image.to_vector<int64_t>());
}

TEST(DecodeLimits, TwentyThousandScansAreRefusedQuickly) {
  // The example: a progressive file whose 20,000 scans each re-decode the image.
  const std::vector<uint8_t> bytes =
      with_scans(progressive_jpeg(solid_image(512, 512, 3, 90)), 20000);
  EXPECT_BOUNDED_ERROR(decode(bytes, "scans.jpg"), "scans.jpg: JPEG has more than 100 scans");
  DecodeOptions fewer;
  fewer.max_jpeg_scans = 9;
  EXPECT_LOOM_ERROR(decode(progressive_jpeg(solid_image(8, 8, 3, 1)), "ten.jpg", fewer),
                    "ten.jpg: JPEG has more than 9 scans (DecodeOptions::max_jpeg_scans");
}

TEST(DecodeLimits, ScansTimesPixelsOverTheWorkLimitAreRefused) {
  // 80 scans, under the scan limit, but of 16.8 Mpixel: 1.3 G pixel-scans of decoding work
  // where the limit is 2^30 (a normal progressive photograph costs about 10 per pixel).
  const std::vector<uint8_t> bytes =
      with_scans(progressive_jpeg(solid_image(4096, 4096, 3, 90)), 80);
  EXPECT_BOUNDED_ERROR(decode(bytes, "work.jpg"), "work.jpg: JPEG needs more decoding work");
  DecodeOptions less;
  less.max_decode_work = 64 * 64 * 9;
  EXPECT_LOOM_ERROR(decode(progressive_jpeg(solid_image(64, 64, 3, 1)), "ten.jpg", less),
                    "10 scans of 64x64 pixels are over the limit of 36864 pixel-scans "
                    "(DecodeOptions::max_decode_work)");
}

// ---- memory ---------------------------------------------------------------------------------

TEST(DecodeLimits, DecodedPixelsOverTheMemoryLimitAreRefusedBeforeAllocation) {
  // height x width x channels as the decoder holds them: 3 for RGB, 4 + 3 for CMYK (its RGB copy).
  DecodeOptions options;
  options.max_decode_bytes = 3 * 100 * 80 - 1;
  EXPECT_LOOM_ERROR(decode(encode_png(solid_image(80, 100, 3, 1)), "a.png", options),
                    "a.png: PNG of 100x80 pixels needs 24000 bytes to decode (3 per pixel), over "
                    "the limit of 23999");
  EXPECT_LOOM_ERROR(decode(encode_jpeg(solid_image(80, 100, 3, 1)), "a.jpg", options),
                    "a.jpg: JPEG of 100x80 pixels needs 24000 bytes to decode (3 per pixel)");
  options.max_decode_bytes = 7 * 100 * 80 - 1;
  EXPECT_LOOM_ERROR(decode(encode_jpeg(solid_image(80, 100, 4, 1)), "cmyk.jpg", options),
                    "cmyk.jpg: JPEG of 100x80 pixels needs 56000 bytes to decode (7 per pixel)");
  // DCT scaling decodes fewer pixels: the limit applies to those.
  options.height = options.width = 10;
  EXPECT_EQ(decode(encode_jpeg(solid_image(80, 100, 4, 1)), "cmyk.jpg", options).shape(),
            (Shape{10, 10, 3}));
}

TEST(DecodeLimits, ProgressiveCoefficientsOverTheMemoryLimitAreRefused) {
  // A progressive CMYK file keeps 2 bytes per pixel for each of its 4 components (8 MiB here)
  // besides its 7 MiB of output pixels: libjpeg gets what the output leaves of the limit.
  const std::vector<uint8_t> bytes = progressive_jpeg(solid_image(1024, 1024, 4, 200));
  DecodeOptions options;
  options.max_decode_bytes = 12 << 20;
  EXPECT_LOOM_ERROR(decode(bytes, "cmyk.jpg", options),
                    "cmyk.jpg: JPEG needs more decoder memory than the limit of 12582912 bytes");
  options.max_decode_bytes = 16 << 20;
  EXPECT_EQ(decode(bytes, "cmyk.jpg", options).shape(), (Shape{1024, 1024, 3}));
}

// `png` with `count` zTXt chunks, each a few KB of zlib stream that inflates to 8 MB of text
// (libpng's default cap for one chunk), inserted after IHDR.
std::vector<uint8_t> with_text_bombs(const std::vector<uint8_t>& png, int count) {
  const std::vector<uint8_t> text(8000000 - 16, 'a');
  uLongf packed_size = compressBound(text.size());
  std::vector<uint8_t> packed(packed_size);
  LOOM_ASSERT(compress2(packed.data(), &packed_size, text.data(), text.size(), 9) == Z_OK);
  std::vector<uint8_t> chunk = {0, 0, 0, 0, 'z', 'T', 'X', 't', 'b', 'o', 'm', 'b', 0, 0};
  chunk.insert(chunk.end(), packed.begin(),
               packed.begin() + static_cast<std::ptrdiff_t>(packed_size));
  const uint32_t length = static_cast<uint32_t>(chunk.size() - 8);
  for (int i = 0; i < 4; ++i) chunk[i] = static_cast<uint8_t>(length >> (24 - 8 * i));
  const uint32_t crc =
      static_cast<uint32_t>(crc32(0, chunk.data() + 4, static_cast<uInt>(chunk.size() - 4)));
  for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<uint8_t>(crc >> (24 - 8 * i)));
  const size_t after_ihdr = 8 + 8 + 13 + 4;
  std::vector<uint8_t> out(png.begin(), png.begin() + after_ihdr);
  for (int i = 0; i < count; ++i) out.insert(out.end(), chunk.begin(), chunk.end());
  out.insert(out.end(), png.begin() + after_ihdr, png.end());
  return out;
}

TEST(DecodeLimits, CompressedTextChunksAreNotInflated) {
  // 1000 chunks of 8 MB of text each: 8 GB to inflate and keep, in a 10 MB file. The pixels
  // need none of it, so the decoder skips every ancillary chunk unread.
  const Tensor image = testing::random_image(6, 5, 3, 1);
  const std::vector<uint8_t> bytes = with_text_bombs(encode_png(image), 1000);
  ASSERT_LT(bytes.size(), 20u << 20);
  const ::loom::testing::ChildOutcome outcome = ::loom::testing::run_bounded([&] {
    LOOM_CHECK(decode(bytes, "text.png").to_vector<int64_t>() == image.to_vector<int64_t>(),
               "wrong pixels");
  });
  EXPECT_EQ(outcome.message, "returned without an error");
}

TEST(DecodeLimits, TargetSizeOverThePixelLimitIsRefusedBeforeAllocation) {
  // A target size comes from a model file's preprocessing, which is itself a downloaded file.
  const std::vector<uint8_t> bytes = progressive_jpeg(solid_image(8, 8, 3, 1));
  DecodeOptions options;
  options.height = options.width = 20000;
  EXPECT_LOOM_ERROR(decode(bytes, "small.jpg", options),
                    "target size 20000x20000 is over the limit");
}

}  // namespace
}  // namespace loom::data
