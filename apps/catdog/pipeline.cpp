// Shared pieces of loom-catdog's subcommands.
#include "pipeline.h"

#include <algorithm>
#include <cmath>

#include "commands.h"

namespace loom::catdog {

Device parse_device(const std::string& spec) {
  if (spec.empty()) return cuda_is_available() ? cuda_device(0) : kCPU;
  LOOM_CHECK(spec == "cpu" || spec == "cuda" || spec.rfind("cuda:", 0) == 0,
             "--device: expected "
             "cpu, cuda or cuda:N, got \"",
             spec, "\"");
  Device device(spec);
  if (device.is_cuda()) {
    LOOM_CHECK(built_with_cuda(), "--device ", spec, ": this loom-catdog was built without CUDA");
    LOOM_CHECK(device.index < cuda_device_count(), "--device ", spec, ": this machine has ",
               cuda_device_count(), " CUDA devices");
  }
  return device;
}

data::OnBadInput on_bad_input(bool strict) {
  return strict ? data::OnBadInput::Throw : data::OnBadInput::Skip;
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
                                            Device device, int workers,
                                            data::OnBadInput on_bad_input) {
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
  const size_t row =
      o.dim() > 0 && o.size(0) > 0 ? values.size() / static_cast<size_t>(o.size(0)) : 1;
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

train::LossFn loss_for_outputs(int64_t outputs, double label_smoothing) {
  return outputs == 1 ? train::binary_cross_entropy_loss(label_smoothing)
                      : train::cross_entropy_loss(label_smoothing);
}

}  // namespace loom::catdog
