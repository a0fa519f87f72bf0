// Locating the cat/dog photographs.
#include "data_source.h"

#include <cstdlib>
#include <filesystem>

namespace loom::catdog {

namespace fs = std::filesystem;

std::vector<std::string> default_data_roots() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("LOOM_DATA_DIR"); env != nullptr && *env) roots.push_back(env);
  std::vector<std::string> bases = {"."};
#ifdef LOOM_SOURCE_DIR
  bases.push_back(LOOM_SOURCE_DIR);
#endif
  for (const std::string& base : bases) {
    roots.push_back(
        (fs::path(base) / ".." / "shared" / "data" / "cats_dogs").lexically_normal().string());
    roots.push_back((fs::path(base) / "data" / "cats_dogs").lexically_normal().string());
  }
  return roots;
}

std::optional<vision::DataSplit> find_default_data() {
  for (const std::string& root : default_data_roots()) {
    if (auto split = vision::split_of(root)) return split;
  }
  return std::nullopt;
}

std::string layout_help() {
  std::string text =
      "expected DIR/train/<class>/*.jpg and DIR/val/<class>/*.jpg (or Kaggle's "
      "DIR/training_set/<class>/ and DIR/test_set/<class>/), one folder per class, e.g. "
      "DIR/train/cat/cat.1.jpg and DIR/train/dog/dog.1.jpg; searched:";
  for (const std::string& root : default_data_roots()) text += " " + root;
  return text;
}

}  // namespace loom::catdog
