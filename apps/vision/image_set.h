// Photographs decoded once into memory: a folder of class folders (data::ImageFolder) decoded
// at a model's preprocessing, for loom-catdog's training and evaluation and loom-scaling's
// photograph runs alike.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace loom::vision {

// The limit that keeps a model file's input size (its preprocessing) from costing unbounded
// memory: every image of a folder decoded (uint8).
inline constexpr double kMaxDecodedSetBytes = 16.0 * (1 << 30);

// A folder of class folders decoded once with p.decode_options() (later epochs decode nothing).
// An empty class folder, or a class none of whose images decodes, is an error naming it; any
// other image that does not decode is left out with a warning (Skip) or is an error (Throw).
struct ImageSet {
  std::unique_ptr<data::ImageFolder> folder;
  std::unique_ptr<data::InMemoryDataset> images;
  std::vector<int64_t> files;  // images' index i is the folder's file files[i]
  const std::vector<std::string>& classes() const { return folder->classes(); }
  const std::string& path(int64_t i) const {
    return folder->path(files.at(static_cast<size_t>(i)));
  }
};
// Over kMaxDecodedSetBytes of decoded images is an error before any is decoded. When `progress`
// is a terminal, a line there counts the images decoded (and is erased at the end).
ImageSet load_image_set(const std::string& dir, const io::Preprocessing& p, int threads,
                        data::OnBadInput on_bad_input = data::OnBadInput::Skip,
                        std::ostream* progress = nullptr);

}  // namespace loom::vision
