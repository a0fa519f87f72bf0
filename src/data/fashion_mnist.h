// Fashion-MNIST from its IDX files (gzipped or not), by default where Debian's
// dataset-fashion-mnist package puts them. Images are uint8 [28, 28, 1]; labels 0..9.
#pragma once

#include <string>
#include <vector>

#include "loom/data/dataset.h"

namespace loom::data {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

class FashionMnist : public Dataset {
 public:
  // Reads <root>/{train,t10k}-{images-idx3,labels-idx1}-ubyte, with or without .gz. Missing,
  // truncated or inconsistent files throw loom::Error naming the file.
  explicit FashionMnist(const std::string& root = kFashionMnistDir, bool train = true);

  int64_t size() const override { return count_; }
  Example get(int64_t index) const override;
  static const std::vector<std::string>& classes();  // "T-shirt/top", "Trouser", ...

 private:
  int64_t count_ = 0;
  int64_t rows_ = 0, cols_ = 0;
  Tensor images_;  // uint8 [count, rows, cols, 1]
  std::vector<uint8_t> labels_;
};

namespace detail {
// One IDX file of unsigned bytes: its dimensions and the data, checked against `magic`
// (0x801 for labels, 0x803 for images).
struct IdxFile {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
IdxFile read_idx(const std::string& path, uint32_t magic);
}  // namespace detail

}  // namespace loom::data
