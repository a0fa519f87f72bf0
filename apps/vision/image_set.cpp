// Decoding a folder of class folders once, noting which file gave each decoded image.
#include "vision/image_set.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace loom::vision {

namespace {

// A dataset's samples, noting which ones decoded: InMemoryDataset keeps those, in order, so that
// its index i is the i-th decoded sample (and the file that gave it can be named).
class DecodeRecord : public data::Dataset {
 public:
  explicit DecodeRecord(const data::Dataset& source)
      : source_(source), decoded_(source.size(), 0) {}
  int64_t size() const override { return source_.size(); }
  data::Example get(int64_t index) const override {
    data::Example e = source_.get(index);
    decoded_[index] = 1;  // each index is fetched by one thread
    return e;
  }
  std::vector<int64_t> decoded() const {
    std::vector<int64_t> indices;
    for (size_t i = 0; i < decoded_.size(); ++i)
      if (decoded_[i]) indices.push_back(static_cast<int64_t>(i));
    return indices;
  }

 private:
  const data::Dataset& source_;
  mutable std::vector<char> decoded_;
};

}  // namespace

namespace {

// "decoding DIR: k/N images", redrawn at most ten times a second, on a terminal only.
data::InMemoryDataset::Progress decode_progress(std::ostream* out, const std::string& dir) {
  if (!train::is_terminal(out)) return nullptr;
  return [out, dir, last = std::chrono::steady_clock::time_point()](int64_t done,
                                                                    int64_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done == total) {
      *out << "\r\033[K" << std::flush;
      return;
    }
    if (now - last < std::chrono::milliseconds(100)) return;
    last = now;
    const std::string line =
        "decoding " + dir + ": " + std::to_string(done) + "/" + std::to_string(total) + " images";
    *out << "\r" << train::fit_line({line}, train::terminal_columns(out)) << "\033[K" << std::flush;
  };
}

}  // namespace

ImageSet load_image_set(const std::string& dir, const io::Preprocessing& p, int threads,
                        data::OnBadInput on_bad_input, std::ostream* progress) {
  // By default a photograph that does not decode is left out with a warning line, as in a long
  // run one bad file should not cost the whole training.
  data::ImageFolderOptions options;
  options.decode = p.decode_options();
  options.on_bad_input = on_bad_input;
  ImageSet set;
  std::unique_ptr<DecodeRecord> record;
  try {  // only strict mode lets a BadSample out
    set.folder = std::make_unique<data::ImageFolder>(dir, options);
    // Every image is kept decoded at the model's input size: a model file asking for a huge
    // input must not make that gigabytes of memory.
    const double bytes = static_cast<double>(set.folder->size()) * static_cast<double>(p.height) *
                         static_cast<double>(p.width) * static_cast<double>(p.channels);
    LOOM_CHECK(bytes <= kMaxDecodedSetBytes, dir, ": ", set.folder->size(), " images at ", p.height,
               "x", p.width, "x", p.channels, " would take ",
               static_cast<int64_t>(bytes / (1 << 20)), " MiB decoded, over the limit of ",
               kMaxDecodedSetBytes / (1 << 20),
               " MiB (the model's input size comes from its preprocessing)");
    record = std::make_unique<DecodeRecord>(*set.folder);
    set.images = std::make_unique<data::InMemoryDataset>(
        *record, std::max(threads, 1), on_bad_input, decode_progress(progress, dir));
  } catch (const data::BadSample& e) {
    throw data::BadSample(
        ::loom::detail::concat(e.what(), " (--strict: every image must be usable)"));
  }
  set.files = record->decoded();
  LOOM_ASSERT(static_cast<int64_t>(set.files.size()) == set.images->size());
  // An empty class, or one whose every image failed, would train a one-class model that scores
  // 50% and exits 0.
  std::vector<int64_t> decoded(set.classes().size(), 0), listed(set.classes().size(), 0);
  for (int64_t i = 0; i < set.folder->size(); ++i) ++listed[set.folder->label(i)];
  for (const int64_t f : set.files) ++decoded[set.folder->label(f)];
  for (size_t c = 0; c < decoded.size(); ++c) {
    const std::string class_dir = (std::filesystem::path(dir) / set.classes()[c]).string();
    LOOM_CHECK(listed[c] > 0, class_dir, ": the class folder has no images");
    LOOM_CHECK(decoded[c] > 0, class_dir, ": none of its ", listed[c],
               " images could be decoded (the warnings above name each one)");
  }
  return set;
}

}  // namespace loom::vision
