// Shared pieces of loom-catdog's subcommands.
#include "pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>

#include "commands.h"

namespace loom::catdog {

Device parse_device(const std::string& spec) {
  if (spec.empty()) return cuda_is_available() ? cuda_device(0) : kCPU;
  LOOM_CHECK(spec == "cpu" || spec == "cuda" || spec.rfind("cuda:", 0) == 0, "--device: expected "
             "cpu, cuda or cuda:N, got \"", spec, "\"");
  Device device(spec);
  if (device.is_cuda()) {
    LOOM_CHECK(built_with_cuda(), "--device ", spec, ": this loom-catdog was built without CUDA");
    LOOM_CHECK(device.index < cuda_device_count(), "--device ", spec, ": this machine has ",
               cuda_device_count(), " CUDA devices");
  }
  return device;
}

data::OnBadInput on_bad_input(bool strict) { return strict ? data::OnBadInput::Throw : data::OnBadInput::Skip; }

namespace {

// A dataset's samples, noting which ones decoded: InMemoryDataset keeps those, in order, so that
// its index i is the i-th decoded sample (and the file that gave it can be named).
class DecodeRecord : public data::Dataset {
 public:
  explicit DecodeRecord(const data::Dataset& source) : source_(source), decoded_(source.size(), 0) {}
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
  return [out, dir, last = std::chrono::steady_clock::time_point()](int64_t done, int64_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done == total) {
      *out << "\r\033[K" << std::flush;
      return;
    }
    if (now - last < std::chrono::milliseconds(100)) return;
    last = now;
    const std::string line = "loom-catdog: decoding " + dir + ": " + std::to_string(done) + "/" + std::to_string(total) +
                             " images";
    *out << "\r" << train::fit_line({line}, train::terminal_columns(out)) << "\033[K" << std::flush;
  };
}

}  // namespace

ImageSet load_image_set(const std::string& dir, const io::Preprocessing& p, int threads, data::OnBadInput on_bad_input,
                        std::ostream* progress) {
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
    LOOM_CHECK(bytes <= kMaxDecodedSetBytes, dir, ": ", set.folder->size(), " images at ", p.height, "x", p.width,
               "x", p.channels, " would take ", static_cast<int64_t>(bytes / (1 << 20)), " MiB decoded, over the limit of ",
               kMaxDecodedSetBytes / (1 << 20), " MiB (the model's input size comes from its preprocessing)");
    record = std::make_unique<DecodeRecord>(*set.folder);
    set.images = std::make_unique<data::InMemoryDataset>(*record, std::max(threads, 1), on_bad_input,
                                                         decode_progress(progress, dir));
  } catch (const data::BadSample& e) {
    throw data::BadSample(::loom::detail::concat(e.what(), " (--strict: every image must be usable)"));
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

namespace {

std::string square(int64_t side) { return std::to_string(side) + "x" + std::to_string(side); }

}  // namespace

void check_input_size(const std::string& spec_json, const io::Preprocessing& p,
                      const std::string& source) {
  using Verdict = nn::InputFit::Verdict;
  std::optional<nn::SpecShapes> shapes;
  try {
    shapes.emplace(spec_json);
  } catch (const Error& e) {
    LOOM_FAIL(source, ": cannot read the model's spec: ", e.what());
  }
  const nn::InputFit fit = shapes->fit({p.channels, p.height, p.width});
  if (fit.verdict == Verdict::Fits || fit.verdict == Verdict::Unknown) return;
  std::string takes = "does not take them";
  if (fit.verdict != Verdict::Refused) {
    const auto sides = shapes->square_sides(p.channels, io::kMaxInputSide);
    if (!sides) {
      takes = "takes no square image up to " + square(io::kMaxInputSide);
    } else {
      takes = "takes " + square(sides->smallest) +
              (sides->largest > sides->smallest ? " to " + square(sides->largest) : std::string());
    }
  }
  LOOM_FAIL(source, ": its preprocessing asks for ", p.channels, "-channel ", p.height, "x",
            p.width, " images, but its spec ", takes, " (",
            fit.layer.empty() ? "" : "layer \"" + fit.layer + "\": ", fit.reason, ")");
}

Subset::Subset(const data::Dataset& source, int64_t count, uint64_t seed) : source_(source) {
  LOOM_CHECK(count > 0, "--limit must be positive, got ", count);
  indices_ = data::permutation(source.size(), seed, 0);
  indices_.resize(static_cast<size_t>(std::min(count, source.size())));
}

data::AugmentOptions preprocessing_transform(const io::Preprocessing& p) {
  data::AugmentOptions o;
  o.rescale = p.rescale;
  o.mean = p.mean;
  o.std = p.std;
  return o;
}

data::DataLoaderOptions eval_loader_options(const io::Preprocessing& p, int64_t batch_size,
                                            Device device, int workers, data::OnBadInput on_bad_input) {
  data::DataLoaderOptions o;
  o.on_bad_input = on_bad_input;
  // At most kMaxEvalBatchBytes of float32 images a batch, whatever the model's input size.
  const int64_t image_bytes = std::max<int64_t>(1, p.channels * p.height * p.width * 4);
  o.batch_size = std::max<int64_t>(1, std::min(batch_size, kMaxEvalBatchBytes / image_bytes));
  o.shuffle = false;
  o.num_workers = workers;
  o.device = device;
  // uint8 crosses to the GPU and is scaled there: a quarter of the bytes of float32.
  o.augment_on_device = device.is_cuda();
  o.augment = preprocessing_transform(p);
  return o;
}

void check_finite_outputs(const Tensor& outputs, const std::string& model_path,
                          const std::function<std::string(int64_t row)>& image_of) {
  const Tensor o = outputs.detach().cpu().to(kFloat64).contiguous();
  const std::vector<double> values = o.to_vector<double>();
  const size_t row = o.dim() > 0 && o.size(0) > 0 ? values.size() / static_cast<size_t>(o.size(0)) : 1;
  for (size_t i = 0; i < values.size(); ++i) {
    LOOM_CHECK(std::isfinite(values[i]), model_path, ": a non-finite output (", values[i], ") for ",
               image_of(static_cast<int64_t>(i / row)), "; are the model's weights finite?");
  }
}

std::string class_list(const std::vector<std::string>& classes) {
  std::string text = "[";
  for (size_t c = 0; c < classes.size(); ++c) text += (c ? ", " : "") + classes[c];
  return text + "]";
}

int64_t outputs_for_classes(size_t classes) {
  LOOM_ASSERT(classes >= 2);
  return classes == 2 ? 1 : static_cast<int64_t>(classes);
}

void check_model_classes(const io::Preprocessing& p, const std::string& source) {
  LOOM_CHECK(p.class_names.size() >= 2, source, ": its preprocessing names ", p.class_names.size(),
             p.class_names.size() == 1 ? " class (" : " classes (", class_list(p.class_names),
             "); a model needs at least 2");
}

train::LossFn loss_for_outputs(int64_t outputs) {
  return outputs == 1 ? train::binary_cross_entropy_loss() : train::cross_entropy_loss();
}

}  // namespace loom::catdog
