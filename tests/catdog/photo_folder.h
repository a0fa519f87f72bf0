// A small generated cat/dog photo folder for the tests that train loom-catdog: no GoogleTest
// here, so programs that are not tests (tests/cluster's cluster_tool) make the same folder.
#pragma once

#include <loom/loom.h>

#include <filesystem>
#include <string>

namespace loom::testing {

namespace fs = std::filesystem;

// root/{train,val}/{cat,dog}/*.png: small 16x16 pictures, dogs brighter on the left.
inline void make_photo_folder(const std::string& root, int per_class_train, int per_class_val,
                              uint64_t seed) {
  Generator gen(seed);
  for (const char* split : {"train", "val"}) {
    const int n = std::string(split) == "train" ? per_class_train : per_class_val;
    for (int label = 0; label < 2; ++label) {
      const fs::path dir = fs::path(root) / split / (label ? "dog" : "cat");
      fs::create_directories(dir);
      for (int i = 0; i < n; ++i) {
        Tensor img = uniform({16, 16, 3}, 0.0, 180.0, kFloat32, &gen);
        Tensor half = img.narrow(1, label ? 0 : 8, 8);
        half.copy_(half + 70.0);
        data::write_file((dir / (std::to_string(i) + ".png")).string(),
                         data::encode_png(img.to(kUInt8)));
      }
    }
  }
}

}  // namespace loom::testing
