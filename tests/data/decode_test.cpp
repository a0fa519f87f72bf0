// Decoding and resizing: round trips through the encoders, colour conversions, libjpeg's DCT
// scaling, PIL-compatible resizing by hand-computed values, and every bad-input case.
#include "loom/data/decode.h"

#include <cstring>

#include "data_testing.h"
#include "loom/data/encode.h"

namespace loom::data {
namespace {

using testing::random_image;
using testing::solid_image;
using testing::TempDir;

Tensor decode(const std::vector<uint8_t>& bytes, const DecodeOptions& options = {}) {
  return decode_image(bytes.data(), bytes.size(), "buffer", options);
}

int max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto va = a.to_vector<int64_t>(), vb = b.to_vector<int64_t>();
  int worst = 0;
  for (size_t i = 0; i < va.size(); ++i) worst = std::max<int>(worst, std::abs(int(va[i] - vb[i])));
  return worst;
}

TEST(Decode, PngRoundTripIsExact) {
  const Tensor image = random_image(7, 11, 3, 1);
  const Tensor back = decode(encode_png(image));
  EXPECT_EQ(back.shape(), (Shape{7, 11, 3}));
  EXPECT_EQ(back.to_vector<int64_t>(), image.to_vector<int64_t>());
}

TEST(Decode, PngGrayAndAlphaBecomeRgb) {
  const Tensor gray = random_image(5, 4, 1, 2);
  const Tensor rgb = decode(encode_png(gray));
  ASSERT_EQ(rgb.shape(), (Shape{5, 4, 3}));
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(rgb.select(2, c).to_vector<int64_t>(), gray.select(2, 0).to_vector<int64_t>());
  }
  const Tensor rgba = random_image(3, 6, 4, 3);
  const Tensor dropped = decode(encode_png(rgba));  // alpha is dropped, as PIL's convert('RGB')
  EXPECT_EQ(dropped.to_vector<int64_t>(), rgba.narrow(2, 0, 3).to_vector<int64_t>());
  const Tensor gray_alpha = random_image(2, 2, 2, 4);
  const Tensor ga = decode(encode_png(gray_alpha));
  EXPECT_EQ(ga.select(2, 1).to_vector<int64_t>(), gray_alpha.select(2, 0).to_vector<int64_t>());
}

TEST(Decode, JpegRoundTripIsClose) {
  // A smooth image survives JPEG at quality 95 within a few levels.
  Tensor image = empty({16, 24, 3}, kUInt8);
  uint8_t* p = image.data_ptr<uint8_t>();
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 24; ++x)
      for (int c = 0; c < 3; ++c)
        p[(y * 24 + x) * 3 + c] = static_cast<uint8_t>(20 + 4 * x + 3 * y + 30 * c);
  const Tensor back = decode(encode_jpeg(image, 95));
  EXPECT_EQ(back.shape(), (Shape{16, 24, 3}));
  EXPECT_LE(max_abs_diff(back, image), 8);
}

TEST(Decode, JpegGrayscaleAndCmykBecomeRgb) {
  const Tensor gray = decode(encode_jpeg(solid_image(8, 8, 1, 77), 100));
  ASSERT_EQ(gray.shape(), (Shape{8, 8, 3}));
  for (int64_t v : gray.to_vector<int64_t>()) EXPECT_NEAR(v, 77, 1);
  // Adobe CMYK stores inverted ink: RGB = stored * K / 255.
  Tensor cmyk = empty({8, 8, 4}, kUInt8);
  uint8_t* p = cmyk.data_ptr<uint8_t>();
  for (int i = 0; i < 64; ++i) {
    p[4 * i] = 200, p[4 * i + 1] = 100, p[4 * i + 2] = 50, p[4 * i + 3] = 128;
  }
  const Tensor rgb = decode(encode_jpeg(cmyk, 100));
  ASSERT_EQ(rgb.shape(), (Shape{8, 8, 3}));
  const auto v = rgb.to_vector<int64_t>();
  const int expected[3] = {200 * 128 / 255, 100 * 128 / 255, 50 * 128 / 255};  // 100, 50, 25
  for (int i = 0; i < 64; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(v[3 * i + c], expected[c], 3) << "pixel " << i;
}

TEST(Decode, JpegScaleChoice) {
  EXPECT_EQ(jpeg_scale_eighths(400, 400, 64, 64), 2);  // 400/8*2 = 100 >= 64; 1/8 gives 50
  EXPECT_EQ(jpeg_scale_eighths(512, 512, 64, 64), 1);  // exactly 64
  EXPECT_EQ(jpeg_scale_eighths(96, 80, 64, 64), 8);    // target more than half: no scaling
  EXPECT_EQ(jpeg_scale_eighths(300, 129, 64, 64), 4);  // 129*4/8 -> 65 >= 64, 3/8 -> 49
  EXPECT_EQ(jpeg_scale_eighths(1000, 1000, 0, 0), 8);  // no target
}

TEST(Decode, JpegDctScalingDecodesSmallThenResizes) {
  const Tensor image = solid_image(256, 256, 3, 180);
  DecodeOptions options;
  options.height = 32;
  options.width = 32;
  const Tensor out = decode(encode_jpeg(image, 95), options);
  EXPECT_EQ(out.shape(), (Shape{32, 32, 3}));
  for (int64_t v : out.to_vector<int64_t>()) EXPECT_NEAR(v, 180, 2);
  options.dct_scaling = false;
  EXPECT_EQ(decode(encode_jpeg(image, 95), options).shape(), (Shape{32, 32, 3}));
}

TEST(Decode, OnePixelImages) {
  Tensor one = empty({1, 1, 3}, kUInt8);
  one.data_ptr<uint8_t>()[0] = 10, one.data_ptr<uint8_t>()[1] = 200,
  one.data_ptr<uint8_t>()[2] = 90;
  DecodeOptions options;
  options.height = 4;
  options.width = 3;
  const Tensor png = decode(encode_png(one), options);
  ASSERT_EQ(png.shape(), (Shape{4, 3, 3}));
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(png.to_vector<int64_t>()[3 * i], 10);
    EXPECT_EQ(png.to_vector<int64_t>()[3 * i + 1], 200);
  }
  EXPECT_EQ(decode(encode_jpeg(one, 100)).shape(), (Shape{1, 1, 3}));
  options.interpolation = Interpolation::Bilinear;
  EXPECT_EQ(decode(encode_jpeg(one, 100), options).shape(), (Shape{4, 3, 3}));
}

// ---- resizing, by hand ----------------------------------------------------------------------

Tensor row_image(const std::vector<int>& values) {  // [1, n, 1]
  Tensor t = empty({1, static_cast<int64_t>(values.size()), 1}, kUInt8);
  for (size_t i = 0; i < values.size(); ++i)
    t.data_ptr<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
  return t;
}

TEST(Resize, NearestPicksFloorOfCentreTimesScale) {
  // 6 -> 4: scale 1.5, source of x is floor((x + 0.5) * 1.5) = 0, 2, 3, 5.
  const Tensor out =
      resize_image(row_image({10, 20, 30, 40, 50, 60}), 1, 4, Interpolation::Nearest);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{10, 30, 40, 60}));
  // 2 -> 5 upsampling: floor((x + 0.5) * 0.4) = 0, 0, 1, 1, 1.
  const Tensor up = resize_image(row_image({7, 9}), 1, 5, Interpolation::Nearest);
  EXPECT_EQ(up.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 9, 9, 9}));
}

TEST(Resize, AreaAveragesTheCoveredPixels) {
  // 4 -> 2: each output is the mean of two inputs.
  const Tensor out = resize_image(row_image({10, 20, 100, 200}), 1, 2, Interpolation::Area);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{15, 150}));
  // 2-D: a 4x4 checker of 0/100 in 2x2 blocks shrinks to the block values.
  Tensor img = empty({4, 4, 1}, kUInt8);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      img.data_ptr<uint8_t>()[y * 4 + x] = ((y / 2 + x / 2) % 2) ? 100 : 0;
  EXPECT_EQ(resize_image(img, 2, 2, Interpolation::Area).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 100, 100, 0}));
}

TEST(Resize, BilinearMatchesPillowTriangleFilter) {
  // Upsampling 2 -> 4 (scale 0.5, support 1): centres 0.25, 0.75, 1.25, 1.75 in source pixels.
  // Pillow takes pixels [int(centre - 0.5), int(centre + 1.5)) clipped to the image, weighs pixel
  // i by 1 - |i + 0.5 - centre| and renormalises. centre 0.25: window [0, 1) -> 10.
  const Tensor up = resize_image(row_image({10, 30}), 1, 4, Interpolation::Bilinear);
  // centre 0.75: window [0, 2), weights 1-|0.5-0.75|=0.75 and 1-|1.5-0.75|=0.25 -> 15.
  // centre 1.25: window [0, 2), weights 0.25, 0.75 -> 25. centre 1.75: window [1, 2) -> 30.
  EXPECT_EQ(up.to_vector<int64_t>(), (std::vector<int64_t>{10, 15, 25, 30}));
  // Downsampling 4 -> 2 (scale 2, support 2): centre 1 -> window [0, 3), weights of pixels 0, 1, 2
  // = 1 - |0.5 - 1|/2, 1 - |1.5 - 1|/2, 1 - |2.5 - 1|/2 = 0.75, 0.75, 0.25.
  const Tensor down = resize_image(row_image({0, 40, 80, 120}), 1, 2, Interpolation::Bilinear);
  const double first = (0.75 * 0 + 0.75 * 40 + 0.25 * 80) / 1.75;     // 28.57 -> 29
  const double second = (0.25 * 40 + 0.75 * 80 + 0.75 * 120) / 1.75;  // 91.43 -> 91
  EXPECT_EQ(down.to_vector<int64_t>(),
            (std::vector<int64_t>{std::lround(first), std::lround(second)}));
}

TEST(Resize, BadArguments) {
  EXPECT_LOOM_ERROR(resize_image(zeros({2, 2, 3}), 1, 1, Interpolation::Nearest), "uint8");
  EXPECT_LOOM_ERROR(resize_image(row_image({1, 2}), 0, 1, Interpolation::Nearest), "positive");
}

// ---- bad input: an error naming the source, never a crash --------------------------------

TEST(DecodeBadInput, ZeroByteFile) {
  TempDir dir;
  write_file(dir / "empty.jpg", {});
  EXPECT_LOOM_ERROR(load_image(dir / "empty.jpg"), "empty.jpg: empty file");
}

TEST(DecodeBadInput, TextNamedJpg) {
  TempDir dir;
  const std::string text = "this is not an image\n";
  write_file(dir / "note.jpg", std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_LOOM_ERROR(load_image(dir / "note.jpg"), "note.jpg: neither a JPEG nor a PNG");
}

TEST(DecodeBadInput, MissingFile) {
  EXPECT_LOOM_ERROR(load_image("/nonexistent/loom/cat.jpg"),
                    "/nonexistent/loom/cat.jpg: cannot open");
}

TEST(DecodeBadInput, TruncatedJpegAtEveryFewBytes) {
  const std::vector<uint8_t> bytes = encode_jpeg(random_image(32, 32, 3, 5), 90);
  // Every cut, in the header or in the entropy-coded data, is an error naming the buffer.
  for (size_t cut = 3; cut < bytes.size() - 2; cut += 37) {
    std::vector<uint8_t> part(bytes.begin(), bytes.begin() + cut);
    EXPECT_LOOM_ERROR(decode_image(part.data(), part.size(), "cut.jpg"),
                      "cut.jpg: not a readable JPEG");
  }
  EXPECT_THROW(decode_image(bytes.data(), bytes.size() / 2, "half.jpg"), BadSample);
}

TEST(DecodeBadInput, TruncatedPng) {
  const std::vector<uint8_t> bytes = encode_png(random_image(16, 16, 3, 6));
  for (size_t cut = 8; cut < bytes.size() - 12; cut += 29) {
    EXPECT_LOOM_ERROR(decode_image(bytes.data(), cut, "cut.png"), "cut.png: not a readable PNG");
  }
}

// CRC-32 as PNG defines it (bitwise, independent of zlib's table-driven one).
uint32_t png_crc(const uint8_t* data, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

// Offset of the first byte of a chunk's type ("IHDR", "IDAT") in a PNG.
size_t find_chunk(const std::vector<uint8_t>& png, const char* type) {
  for (size_t pos = 8; pos + 8 <= png.size();) {
    const uint32_t length =
        (uint32_t{png[pos]} << 24) | (png[pos + 1] << 16) | (png[pos + 2] << 8) | png[pos + 3];
    if (std::memcmp(&png[pos + 4], type, 4) == 0) return pos + 4;
    pos += 12 + length;
  }
  ADD_FAILURE() << "no " << type << " chunk";
  return 0;
}

TEST(DecodeBadInput, PngWithBadCrc) {
  for (const char* chunk : {"IHDR", "IDAT"}) {
    std::vector<uint8_t> bytes = encode_png(random_image(8, 8, 3, 7));
    const size_t type = find_chunk(bytes, chunk);
    const uint32_t length = (uint32_t{bytes[type - 4]} << 24) | (bytes[type - 3] << 16) |
                            (bytes[type - 2] << 8) | bytes[type - 1];
    bytes[type + 4 + length] ^= 0x5A;  // first byte of the chunk's CRC
    EXPECT_LOOM_ERROR(decode_image(bytes.data(), bytes.size(), "crc.png"),
                      "crc.png: not a readable PNG");
  }
}

TEST(DecodeBadInput, HugeDeclaredJpegIsRefusedBeforeAllocation) {
  std::vector<uint8_t> bytes = encode_jpeg(random_image(8, 8, 3, 8), 90);
  // Patch the SOF0 frame header (FF C0, length, precision, height, width) to 20000 x 20000.
  size_t sof = 2;
  while (!(bytes[sof] == 0xFF && bytes[sof + 1] == 0xC0)) ++sof;
  bytes[sof + 5] = 20000 >> 8, bytes[sof + 6] = 20000 & 0xFF;
  bytes[sof + 7] = 20000 >> 8, bytes[sof + 8] = 20000 & 0xFF;
  EXPECT_LOOM_ERROR(decode_image(bytes.data(), bytes.size(), "huge.jpg"),
                    "huge.jpg: JPEG declares 20000x20000 pixels, over the limit");
  // A raised limit lets the header through; the missing data then makes it a truncated file.
  DecodeOptions generous;
  generous.max_pixels = int64_t{1} << 40;
  generous.height = generous.width = 8;
  EXPECT_THROW(decode_image(bytes.data(), bytes.size(), "huge.jpg", generous), BadSample);
}

TEST(DecodeBadInput, HugeDeclaredPngIsRefusedBeforeAllocation) {
  std::vector<uint8_t> bytes = encode_png(random_image(8, 8, 3, 9));
  const size_t ihdr = find_chunk(bytes, "IHDR");
  for (int i = 0; i < 2; ++i) {  // width then height, big-endian, 20000
    bytes[ihdr + 4 + 4 * i + 2] = 20000 >> 8;
    bytes[ihdr + 4 + 4 * i + 3] = 20000 & 0xFF;
  }
  // Recompute the IHDR CRC so that only the size is wrong.
  const uint32_t crc = png_crc(&bytes[ihdr], 4 + 13);
  for (int i = 0; i < 4; ++i) bytes[ihdr + 17 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  EXPECT_LOOM_ERROR(decode_image(bytes.data(), bytes.size(), "huge.png"),
                    "huge.png: PNG declares 20000x20000 pixels, over the limit");
}

TEST(DecodeBadInput, BadOptions) {
  const std::vector<uint8_t> bytes = encode_png(random_image(4, 4, 3, 10));
  DecodeOptions half;
  half.height = 8;
  EXPECT_LOOM_ERROR(decode(bytes, half), "both positive or both 0");
  DecodeOptions none;
  none.max_pixels = 0;
  EXPECT_LOOM_ERROR(decode(bytes, none), "max_pixels must be positive");
}

TEST(Encode, BadArguments) {
  EXPECT_LOOM_ERROR(encode_png(zeros({2, 2, 3})), "encode_png: expected a non-empty uint8");
  EXPECT_LOOM_ERROR(encode_jpeg(random_image(2, 2, 2, 1)), "cannot be stored as JPEG");
  EXPECT_LOOM_ERROR(encode_jpeg(random_image(2, 2, 3, 1), 0), "quality must be in 1..100");
  EXPECT_LOOM_ERROR(write_file("/nonexistent/loom/x.png", {1}),
                    "cannot open /nonexistent/loom/x.png");
}

}  // namespace
}  // namespace loom::data
