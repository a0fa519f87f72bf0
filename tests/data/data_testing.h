// Helpers for the data tests: a temporary folder removed afterwards, random test images, and
// the location of the shared cats/dogs photographs (tests skip when they are absent).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

// random_bits.h before testing.h: its unqualified log/sqrt/cos would otherwise find loom::log
// (ops) first and fail to compile.
#include "loom/tensor/random_bits.h"
#include "testing.h"

namespace loom::data::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "loom_data_XXXXXX").string();
    LOOM_ASSERT(mkdtemp(pattern.data()) != nullptr, "mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A uint8 [h, w, c] image of random values from `seed` (never all zero).
inline Tensor random_image(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Tensor t = empty({h, w, c}, kUInt8);
  uint8_t* p = t.data_ptr<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<uint8_t>(random_bits::hash(seed, i) >> 56);
  return t;
}

// A uint8 [h, w, c] image whose every pixel is `value` in every channel.
inline Tensor solid_image(int64_t h, int64_t w, int64_t c, int value) {
  return full({h, w, c}, value, kUInt8);
}

// The cats/dogs folder: $LOOM_DATA_DIR, else $LOOM_SOURCE_DIR/../shared/data/cats_dogs; "" if
// absent.
inline std::string cats_dogs_dir() {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("LOOM_DATA_DIR")) {
    if (fs::is_directory(fs::path(dir) / "train")) return dir;
    if (fs::is_directory(fs::path(dir) / "cats_dogs" / "train"))
      return (fs::path(dir) / "cats_dogs").string();
  }
  if (const char* src = std::getenv("LOOM_SOURCE_DIR")) {
    const fs::path p = fs::path(src) / ".." / "shared" / "data" / "cats_dogs";
    if (fs::is_directory(p / "train")) return p.string();
  }
  return "";
}

#define LOOM_REQUIRE_CATS_DOGS(dir)                                             \
  const std::string dir = ::loom::data::testing::cats_dogs_dir();               \
  if (dir.empty())                                                              \
  GTEST_SKIP() << "cats_dogs data not found (set LOOM_DATA_DIR or place it at " \
                  "../shared/data/cats_dogs next to the source)"

}  // namespace loom::data::testing
