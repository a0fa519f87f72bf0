// A generated photo folder of any number of classes, for the tests that train loom-catdog on
// more than two (make_photo_folder's two-class folder stays as the other tests use it).
#pragma once

#include <loom/loom.h>

#include <filesystem>
#include <string>
#include <vector>

namespace loom::testing {

// root/{train,val}/<class>/*.png for each of `classes` (at most 6): small 16x16 pictures of
// noise in [0, 150) where class c is brighter by 90 in colour channel c % 3, over the whole
// picture for c < 3 and over its top half from c = 3 on, so that the classes differ visibly and
// no flip, shear or zoom of the training augmentation hides the difference.
inline void make_class_folder(const std::string& root, const std::vector<std::string>& classes,
                              int per_class_train, int per_class_val, uint64_t seed) {
  namespace fs = std::filesystem;
  LOOM_CHECK(classes.size() <= 6, "make_class_folder: at most 6 classes, got ", classes.size());
  Generator gen(seed);
  for (const char* split : {"train", "val"}) {
    const int n = std::string(split) == "train" ? per_class_train : per_class_val;
    for (size_t c = 0; c < classes.size(); ++c) {
      const fs::path dir = fs::path(root) / split / classes[c];
      fs::create_directories(dir);
      for (int i = 0; i < n; ++i) {
        Tensor img = uniform({16, 16, 3}, 0.0, 150.0, kFloat32, &gen);
        Tensor bright = img.narrow(2, static_cast<int64_t>(c % 3), 1).narrow(0, 0, c < 3 ? 16 : 8);
        bright.copy_(bright + 90.0);
        data::write_file((dir / (std::to_string(i) + ".png")).string(),
                         data::encode_png(img.to(kUInt8)));
      }
    }
  }
}

}  // namespace loom::testing
