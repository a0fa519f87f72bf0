// Writes the image decoders' fuzzing seed corpus (valid images of every colour type, progressive
// JPEGs, and broken ones) into $LOOM_FUZZ_CORPUS; scripts/fuzz.sh runs this before the fuzzer.
// Skipped when the variable is not set.
#include <cstdlib>
#include <filesystem>

#include "crafted_jpeg.h"
#include "data_testing.h"
#include "loom/data/decode.h"
#include "loom/data/encode.h"

namespace loom::data {
namespace {

using testing::random_image;

TEST(FuzzCorpus, Write) {
  const char* dir = std::getenv("LOOM_FUZZ_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "LOOM_FUZZ_CORPUS is not set";
  std::filesystem::create_directories(dir);
  const std::string root(dir);
  int written = 0;
  auto put = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    write_file(root + "/" + name, bytes);
    ++written;
  };
  for (int64_t channels : {1, 2, 3, 4}) {
    const Tensor img = random_image(9, 14, channels, 40 + channels);
    put("png_c" + std::to_string(channels) + ".png", encode_png(img));
    if (channels != 2) put("jpeg_c" + std::to_string(channels) + ".jpg", encode_jpeg(img, 75));
  }
  put("one_pixel.png", encode_png(random_image(1, 1, 3, 1)));
  put("one_pixel.jpg", encode_jpeg(random_image(1, 1, 3, 1), 90));
  put("large.jpg", encode_jpeg(random_image(70, 90, 3, 2), 60));  // takes the DCT-scaling path
  std::vector<uint8_t> cut = encode_jpeg(random_image(20, 20, 3, 3), 80);
  cut.resize(cut.size() / 2);
  put("truncated.jpg", cut);
  // Progressive files reach the multi-scan paths (and the scan and work limits).
  put("progressive.jpg", progressive_jpeg(random_image(24, 16, 3, 5)));
  put("progressive_cmyk.jpg", progressive_jpeg(random_image(8, 8, 4, 6)));
  put("progressive_rescanned.jpg", with_scans(progressive_jpeg(random_image(16, 16, 3, 7)), 40));
  std::vector<uint8_t> crc = encode_png(random_image(6, 6, 3, 4));
  crc[crc.size() - 20] ^= 0xFF;
  put("bad_crc.png", crc);
  // Every file decodes or fails cleanly before the fuzzer starts from them.
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    try {
      load_image(entry.path().string());
    } catch (const BadSample&) {
    }
  }
  EXPECT_EQ(written, 15);
}

}  // namespace
}  // namespace loom::data
