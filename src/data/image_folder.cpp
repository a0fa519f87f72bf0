// Scanning an image folder into (path, label) lists, and one decode per class to prove the
// class usable; the rest is decoded per get().
#include "loom/data/image_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "loom/data/input_file.h"

namespace loom::data {

namespace fs = std::filesystem;
using ::loom::detail::concat;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The names of the folders in `dir`, sorted; a failure to read is left in ec for the caller,
// who knows whether it is fatal.
std::vector<std::string> list_folders(const fs::path& dir, std::error_code& ec) {
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec);
  if (ec) return names;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) names.push_back(it->path().filename().string());
  }
  if (ec) return {};
  std::sort(names.begin(), names.end());
  return names;
}

// The entries of `dir` with an image file's name, sorted, each with what it is when it is not a
// regular file (after symbolic links): "a folder", "a named pipe", ... or "" for a file.
std::vector<std::pair<std::string, std::string>> list_images(const fs::path& dir,
                                                             std::error_code& ec) {
  std::vector<std::pair<std::string, std::string>> entries;
  fs::directory_iterator it(dir, ec);
  if (ec) return entries;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_image_file_name(name)) continue;
    struct stat st {};
    const std::string kind = ::stat(it->path().c_str(), &st) != 0
                                 ? std::string("a dangling link or unreadable")
                             : S_ISREG(st.st_mode) ? std::string()
                                                   : std::string(file_kind(st.st_mode));
    entries.emplace_back(name, kind);
  }
  if (ec) return {};
  std::sort(entries.begin(), entries.end());
  return entries;
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
  check_every_class_decodes();
}

void ImageFolder::bad_entry(const std::string& message) const {
  if (options_.on_bad_input == OnBadInput::Throw) throw BadSample(message);
  warn(message);
}

void ImageFolder::scan_class_folders() {
  std::error_code ec;
  classes_ = list_folders(root_, ec);
  LOOM_CHECK(!ec, "ImageFolder: cannot read root folder ", root_, ": ", ec.message());
  for (size_t label = 0; label < classes_.size(); ++label) {
    const fs::path dir = fs::path(root_) / classes_[label];
    const auto entries = list_images(dir, ec);
    // Always an error: the class would have no images.
    LOOM_CHECK(!ec, "ImageFolder: cannot read class folder ", dir.string(), ": ", ec.message());
    for (const auto& [name, kind] : entries) {
      if (!kind.empty()) {
        bad_entry(
            concat("ImageFolder: ", (dir / name).string(), " is not a regular file (", kind, ")"));
        continue;
      }
      files_.push_back((dir / name).string());
      labels_.push_back(static_cast<int64_t>(label));
    }
  }
}

void ImageFolder::scan_flat() {
  std::error_code ec;
  const auto entries = list_images(root_, ec);
  LOOM_CHECK(!ec, "ImageFolder: cannot read root folder ", root_, ": ", ec.message());
  std::vector<std::pair<std::string, std::string>> labelled;  // (class, file)
  for (const auto& [name, kind] : entries) {
    if (!kind.empty()) {
      bad_entry(concat("ImageFolder: ", (fs::path(root_) / name).string(),
                       " is not a regular file (", kind, ")"));
      continue;
    }
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

void ImageFolder::check_every_class_decodes() const {
  std::vector<std::vector<size_t>> members(classes_.size());
  for (size_t i = 0; i < files_.size(); ++i) members[static_cast<size_t>(labels_[i])].push_back(i);
  for (size_t label = 0; label < classes_.size(); ++label) {
    const std::string where = options_.layout == FolderLayout::ClassFolders
                                  ? "class folder " + (fs::path(root_) / classes_[label]).string()
                                  : "class " + classes_[label] + " in " + root_;
    LOOM_CHECK(!members[label].empty(), "ImageFolder: ", where, " has no images");
    std::string first_error;
    bool decodes = false;
    for (size_t i : members[label]) {
      try {
        load_image(files_[i], options_.decode);
        decodes = true;
        break;
      } catch (const BadSample& e) {
        if (options_.on_bad_input == OnBadInput::Throw) throw;
        if (first_error.empty()) first_error = e.what();
      }
    }
    const size_t n = members[label].size();
    LOOM_CHECK(decodes, "ImageFolder: ", where, " has no image that decodes (", n,
               n == 1 ? " file" : " files", ", the first: ", first_error, ")");
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
