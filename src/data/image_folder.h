// ImageFolder: photographs on disk, one class per sub-folder (Keras' flow_from_directory and
// torchvision's ImageFolder) or Kaggle's flat folder where the class is the file name's prefix
// (train/cat.123.jpg). Files are decoded on each get() (and one per class when scanning, to
// prove the class usable); wrap in InMemoryDataset to decode once.
#pragma once

#include <string>
#include <vector>

#include "loom/data/bad_input.h"
#include "loom/data/dataset.h"
#include "loom/data/decode.h"

namespace loom::data {

enum class FolderLayout {
  ClassFolders,  // root/<class>/*.{jpg,jpeg,png}
  KaggleFlat,    // root/<class>.<anything>.{jpg,jpeg,png}
};

struct ImageFolderOptions {
  FolderLayout layout = FolderLayout::ClassFolders;
  DecodeOptions decode;
  // While scanning: an entry with an image's name that is not a regular file (a folder, a
  // FIFO), or a flat-layout file without a class prefix, is a warning (Skip) or an error
  // (Throw). A missing root, no image at all, or a class folder that cannot be read, is empty
  // or has no image that decodes is always an error: training without the class would make a
  // model that never predicts it. Each class's images are decoded in order until one succeeds
  // (in Throw mode the first that fails is the error); the loader meets the others' failures.
  OnBadInput on_bad_input = OnBadInput::Skip;
};

class ImageFolder : public Dataset {
 public:
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {});

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Example get(int64_t index) const override;

  // Class names sorted by name (byte order, as Python's sorted): their index is the label.
  const std::vector<std::string>& classes() const { return classes_; }
  const std::string& path(int64_t index) const;
  int64_t label(int64_t index) const;

 private:
  void scan_class_folders();
  void scan_flat();
  void check_every_class_decodes() const;
  void bad_entry(const std::string& message) const;  // warns or throws, per on_bad_input

  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

// True when the file name ends in .jpg, .jpeg or .png in any letter case.
bool is_image_file_name(const std::string& name);

}  // namespace loom::data
