// A photograph data folder's two halves: DIR/train + DIR/val (or Kaggle's training_set +
// test_set), each with one folder per class.
#pragma once

#include <optional>
#include <string>

namespace loom::vision {

struct DataSplit {
  std::string root;
  std::string train_dir;
  std::string val_dir;
};

// The split under `root`, or nothing when it has neither layout.
std::optional<DataSplit> split_of(const std::string& root);

}  // namespace loom::vision
