// FashionMnist: IDX files written by the test (uncompressed), their error cases (hostile ones
// within a deadline and a memory bound), and the real gzipped files of Debian's
// dataset-fashion-mnist when installed.
#include "loom/data/fashion_mnist.h"

#include <sys/stat.h>

#include <filesystem>

#include "bounded_child.h"
#include "data_testing.h"
#include "loom/data/encode.h"

namespace loom::data {
namespace {

using testing::TempDir;

std::vector<uint8_t> idx(uint32_t magic, const std::vector<uint32_t>& dims,
                         const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto be32 = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  be32(magic | static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims) be32(d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// 3 images of 2x3 with pixel values 10 * image + position; labels 4, 0, 9.
void write_small_set(const TempDir& dir, const std::string& prefix) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<uint8_t>(10 * i + p + 1));
  write_file(dir / (prefix + "-images-idx3-ubyte"), idx(0x800, {3, 2, 3}, pixels));
  write_file(dir / (prefix + "-labels-idx1-ubyte"), idx(0x800, {3}, {4, 0, 9}));
}

TEST(FashionMnist, ReadsUncompressedIdx) {
  TempDir dir;
  write_small_set(dir, "t10k");
  FashionMnist test(dir.path(), false);
  ASSERT_EQ(test.size(), 3);
  const Example e = test.get(1);
  EXPECT_EQ(e.label, 0);
  EXPECT_EQ(e.image.shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(e.image.to_vector<int64_t>(), (std::vector<int64_t>{11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(test.get(2).label, 9);
  EXPECT_EQ(FashionMnist::classes()[9], "Ankle boot");
  EXPECT_LOOM_ERROR(test.get(3), "index 3 out of range for 3 images");
  EXPECT_LOOM_ERROR(FashionMnist(dir.path(), true), "train-images-idx3-ubyte.gz exists");
}

TEST(FashionMnist, BadFilesNameTheFile) {
  TempDir dir;
  write_small_set(dir, "train");
  const std::string images = dir / "train-images-idx3-ubyte",
                    labels = dir / "train-labels-idx1-ubyte";
  auto bytes = idx(0x800, {3, 2, 3}, std::vector<uint8_t>(18, 1));
  write_file(images, std::vector<uint8_t>(bytes.begin(), bytes.end() - 5));
  EXPECT_LOOM_ERROR(FashionMnist(dir.path()),
                    images + " is truncated or corrupt (reading the data, 13 of 18");
  write_file(images, idx(0xA00, {3, 2, 3}, std::vector<uint8_t>(18, 1)));
  EXPECT_LOOM_ERROR(FashionMnist(dir.path()), "magic number 0xa03, expected 0x803");
  write_file(images, idx(0x800, {4, 2, 3}, std::vector<uint8_t>(24, 1)));
  EXPECT_LOOM_ERROR(FashionMnist(dir.path()), "holds 3 labels for 4 images");
  write_file(images, idx(0x800, {3, 2, 3}, std::vector<uint8_t>(18, 1)));
  write_file(labels, idx(0x800, {3}, {1, 12, 3}));
  EXPECT_LOOM_ERROR(FashionMnist(dir.path()), "holds label 12, expected 0..9");
  write_file(labels, {});
  EXPECT_LOOM_ERROR(FashionMnist(dir.path()), "truncated or corrupt (reading the magic number");
}

TEST(FashionMnist, HostileFilesEndInAnErrorWithinBounds) {
  TempDir dir;
  write_small_set(dir, "t10k");
  const std::string images = dir / "t10k-images-idx3-ubyte";
  // A 16-byte file declaring 2 GiB of pixels must not allocate them.
  write_file(images, idx(0x800, {32768, 256, 256}, {}));
  EXPECT_BOUNDED_ERROR(FashionMnist(dir.path(), false),
                       images + " declares 2147483648 bytes, over the limit of 268435456");
  // A FIFO in the file's place must not block.
  std::filesystem::remove(images);
  ASSERT_EQ(::mkfifo(images.c_str(), 0644), 0);
  EXPECT_BOUNDED_ERROR(FashionMnist(dir.path(), false),
                       images + ": not a regular file (a named pipe)");
}

TEST(FashionMnistRealData, DebianPackage) {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed at " << kFashionMnistDir;
  }
  FashionMnist train;
  FashionMnist test(kFashionMnistDir, false);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.get(0).image.shape(), (Shape{28, 28, 1}));
  EXPECT_EQ(train.get(0).label, 9);  // the first training image is an ankle boot
  EXPECT_EQ(test.get(0).label, 9);
  std::vector<int64_t> per_class(10, 0);
  for (int64_t i = 0; i < train.size(); ++i) ++per_class[train.get(i).label];
  for (int64_t c : per_class) EXPECT_EQ(c, 6000);
}

}  // namespace
}  // namespace loom::data
