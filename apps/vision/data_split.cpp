// Finding the two halves of a photograph data folder.
#include "vision/data_split.h"

#include <filesystem>

namespace loom::vision {

namespace fs = std::filesystem;

std::optional<DataSplit> split_of(const std::string& root) {
  static const char* const kLayouts[][2] = {{"train", "val"}, {"training_set", "test_set"}};
  std::error_code ec;
  for (const auto& layout : kLayouts) {
    const fs::path train = fs::path(root) / layout[0], val = fs::path(root) / layout[1];
    if (fs::is_directory(train, ec) && fs::is_directory(val, ec)) {
      return DataSplit{root, train.string(), val.string()};
    }
  }
  return std::nullopt;
}

}  // namespace loom::vision
