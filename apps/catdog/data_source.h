// Where loom-catdog finds its photographs: DIR/train + DIR/val (or Kaggle's training_set +
// test_set), each with one folder per class; by default $LOOM_DATA_DIR, then
// ../shared/data/cats_dogs and ./data/cats_dogs, relative to the working directory and then to
// the source tree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vision/data_split.h"

namespace loom::catdog {

// The folders searched when --data is not given, in order.
std::vector<std::string> default_data_roots();
// The first default root with a usable layout.
std::optional<vision::DataSplit> find_default_data();
// The message that explains the expected layout (for errors and the fallback notice).
std::string layout_help();

}  // namespace loom::catdog
