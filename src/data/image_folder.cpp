// Scanning an image folder into (path, label) lists; decoding happens per get().
#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <system_error>

namespace loom::data {

namespace fs = std::filesystem;
using ::loom::detail::concat;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The names of the folders (or regular files) in `dir`, sorted; a failure to read is left in ec
// for the caller, who knows whether it is fatal.
std::vector<std::string> list_dir(const fs::path& dir, bool want_dirs, std::error_code& ec) {
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec);
  if (ec) return names;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    std::error_code type_ec;
    const bool is_dir = it->is_directory(type_ec);
    const bool is_file = it->is_regular_file(type_ec);
    if (want_dirs ? is_dir : is_file) names.push_back(it->path().filename().string());
  }
  if (ec) return {};
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool is_image_file_name(const std::string& name) {
  const std::string l = lower(name);
  for (const char* ext : {".jpg", ".jpeg", ".png"}) {
    const std::string e(ext);
    if (l.size() > e.size() && l.compare(l.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options)
    : root_(root), options_(std::move(options)) {
  std::error_code ec;
  LOOM_CHECK(fs::exists(root_, ec), "ImageFolder: root folder ", root_, " does not exist");
  LOOM_CHECK(fs::is_directory(root_, ec), "ImageFolder: root ", root_, " is not a folder");
  if (options_.layout == FolderLayout::ClassFolders) {
    scan_class_folders();
  } else {
    scan_flat();
  }
  LOOM_CHECK(!files_.empty(), "ImageFolder: no .jpg, .jpeg or .png files under ", root_,
             options_.layout == FolderLayout::ClassFolders ? " (expected root/<class>/<image>)"
                                                           : " (expected root/<class>.<id>.<ext>)");
}

void ImageFolder::bad_entry(const std::string& message) const {
  if (options_.on_bad_input == OnBadInput::Throw) throw BadSample(message);
  warn(message);
}

void ImageFolder::scan_class_folders() {
  std::error_code ec;
  classes_ = list_dir(root_, true, ec);
  LOOM_CHECK(!ec, "ImageFolder: cannot read root folder ", root_, ": ", ec.message());
  for (size_t label = 0; label < classes_.size(); ++label) {
    const fs::path dir = fs::path(root_) / classes_[label];
    const std::vector<std::string> names = list_dir(dir, false, ec);
    if (ec) {
      bad_entry(concat("ImageFolder: cannot read class folder ", dir.string(), ": ", ec.message()));
      continue;
    }
    size_t found = 0;
    for (const std::string& name : names) {
      if (!is_image_file_name(name)) continue;
      files_.push_back((dir / name).string());
      labels_.push_back(static_cast<int64_t>(label));
      ++found;
    }
    // The class keeps its label even when empty, so labels match Keras' and torchvision's.
    if (found == 0) bad_entry(concat("ImageFolder: class folder ", dir.string(), " has no images"));
  }
}

void ImageFolder::scan_flat() {
  std::error_code ec;
  const std::vector<std::string> names = list_dir(root_, false, ec);
  LOOM_CHECK(!ec, "ImageFolder: cannot read root folder ", root_, ": ", ec.message());
  std::vector<std::pair<std::string, std::string>> labelled;  // (class, file)
  for (const std::string& name : names) {
    if (!is_image_file_name(name)) continue;
    const size_t first_dot = name.find('.');
    if (first_dot == 0 || first_dot == name.rfind('.')) {
      bad_entry(concat("ImageFolder: ", (fs::path(root_) / name).string(),
                       " has no class prefix (expected <class>.<id>.<ext>)"));
      continue;
    }
    labelled.emplace_back(name.substr(0, first_dot), name);
  }
  std::map<std::string, int64_t> index;  // sorted by class name
  for (const auto& entry : labelled) index.emplace(entry.first, 0);
  for (auto& entry : index) {
    entry.second = static_cast<int64_t>(classes_.size());
    classes_.push_back(entry.first);
  }
  for (const auto& entry : labelled) {
    files_.push_back((fs::path(root_) / entry.second).string());
    labels_.push_back(index.at(entry.first));
  }
}

const std::string& ImageFolder::path(int64_t index) const {
  LOOM_CHECK(index >= 0 && index < size(), "ImageFolder: index ", index, " out of range for ",
             size(), " images");
  return files_[index];
}

int64_t ImageFolder::label(int64_t index) const {
  path(index);  // range check
  return labels_[index];
}

Example ImageFolder::get(int64_t index) const {
  return Example{load_image(path(index), options_.decode), labels_[index]};
}

}  // namespace loom::data
