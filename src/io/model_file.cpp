// Model files: save_model / load_model over safetensors with the spec in the metadata. The
// file is a download: its spec is checked against its tensors before anything is built.
#include "loom/io/model_file.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "loom/nn/models/resnet.h"
#include "loom/nn/spec.h"
#include "loom/nn/untrusted_json.h"

namespace loom::io {

using nlohmann::json;

namespace {

// A list of finite numbers, each checked by `ok` (which `rule` describes).
std::vector<double> numbers(const nn::JsonObject& c, const char* key, bool (*ok)(double),
                            const char* rule) {
  std::vector<double> out;
  if (!c.has(key)) return out;
  const json& list = c.at(key);
  LOOM_CHECK(list.is_array(), c.member(key), " must be a list of numbers, got ",
             nn::json_excerpt(list));
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string what = c.member(key) + "[" + std::to_string(i) + "]";
    out.push_back(nn::json_number(list[i], what));
    LOOM_CHECK(ok(out.back()), what, " must be ", rule, ", got ", out.back());
  }
  return out;
}

// The channels the model's first layer takes, where the spec says it: the first leaf down the
// first children, when it is a Conv2d, a BasicBlock or a BatchNorm2d.
std::optional<int64_t> input_channels(const nn::Module& model) {
  const nn::Module* m = &model;
  while (dynamic_cast<const nn::Sequential*>(m) != nullptr && !m->named_children().empty()) {
    m = m->named_children().front().second.get();
  }
  if (const auto* conv = dynamic_cast<const nn::Conv2d*>(m)) return conv->in_channels();
  if (const auto* block = dynamic_cast<const nn::BasicBlock*>(m)) return block->in_channels();
  if (const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(m)) return bn->num_features();
  return std::nullopt;
}

// The tensors of `state` that are not under one of the `layers` (dotted paths, "" the whole).
nn::NamedTensors outside(const nn::NamedTensors& state, const std::vector<std::string>& layers) {
  const std::unordered_set<std::string> skipped(layers.begin(), layers.end());
  if (skipped.count("")) return {};
  nn::NamedTensors out;
  for (const auto& [name, tensor] : state) {
    bool under = false;
    for (size_t dot = name.find('.'); dot != std::string::npos && !under;
         dot = name.find('.', dot + 1)) {
      under = skipped.count(name.substr(0, dot)) != 0;
    }
    if (!under) out.insert(name, tensor);
  }
  return out;
}

}  // namespace

data::DecodeOptions Preprocessing::decode_options() const {
  data::DecodeOptions o;
  o.height = height;
  o.width = width;
  o.interpolation = interpolation;
  o.dct_scaling = false;
  return o;
}

std::string Preprocessing::to_json() const {
  json j = {{"height", height},
            {"width", width},
            {"interpolation", data::interpolation_name(interpolation)},
            {"channels", channels},
            {"rescale", rescale},
            {"class_names", class_names},
            {"mean", mean},
            {"std", std}};
  return j.dump();
}

std::optional<data::Interpolation> interpolation_from_name(const std::string& name) {
  for (data::Interpolation i :
       {data::Interpolation::Nearest, data::Interpolation::Bilinear, data::Interpolation::Area}) {
    if (name == data::interpolation_name(i)) return i;
  }
  return std::nullopt;
}

Preprocessing Preprocessing::from_json(const std::string& text, const std::string& source) {
  const std::string where = source + ": loom.preprocessing";
  const json j = nn::parse_untrusted_json(text, where);
  const nn::JsonObject c(j, where);
  Preprocessing p;
  p.height = c.integer("height", 1, kMaxInputSide);
  p.width = c.integer("width", 1, kMaxInputSide);
  p.channels = c.integer("channels", 1, nn::kMaxSpecInteger);
  LOOM_CHECK(p.channels == 1 || p.channels == 3, source, ": preprocessing has ", p.channels,
             " channels; expected 1 or 3");
  p.rescale = c.number("rescale");
  LOOM_CHECK(p.rescale > 0, c.member("rescale"), " must be positive, got ", p.rescale);
  const json& names = c.at("class_names");
  LOOM_CHECK(names.is_array(), c.member("class_names"), " must be a list of strings, got ",
             nn::json_excerpt(names));
  for (const json& name : names) {
    LOOM_CHECK(name.is_string(), c.member("class_names"), " must be a list of strings, got ",
               nn::json_excerpt(name));
    p.class_names.push_back(name.get<std::string>());
  }
  p.mean = numbers(
      c, "mean", [](double) { return true; }, "finite");
  // A zero std divides every input by zero: the model would see only inf and NaN.
  p.std = numbers(
      c, "std", [](double s) { return s > 0; }, "positive");
  const std::string interpolation = c.string("interpolation", "nearest");  // older files: nearest
  const std::optional<data::Interpolation> parsed = interpolation_from_name(interpolation);
  LOOM_CHECK(parsed.has_value(), source, ": preprocessing interpolation \"",
             nn::excerpt(interpolation), "\" is unknown; expected nearest, bilinear or area");
  p.interpolation = *parsed;
  LOOM_CHECK(
      p.mean.size() == p.std.size() && (p.mean.empty() || p.mean.size() == size_t(p.channels)),
      source, ": preprocessing mean/std have ", p.mean.size(), "/", p.std.size(), " values for ",
      p.channels, " channels");
  return p;
}

namespace detail {

Metadata model_metadata(const nn::Module& model, const Preprocessing& preprocessing,
                        const std::string& kind) {
  return {{"format", "pt"},  // Hugging Face's convention for PyTorch-named weights
          {"loom.kind", kind},
          {"loom.format_version", kFormatVersion},
          {"loom.spec", model.spec_json()},
          {"loom.preprocessing", preprocessing.to_json()}};
}

const std::string& require_metadata(const Metadata& metadata, const std::string& key,
                                    const std::string& path) {
  const auto it = metadata.find(key);
  LOOM_CHECK(it != metadata.end(), path, ": not a loom model file (no \"", key,
             "\" in its metadata)");
  return it->second;
}

void check_tensors_fit(const std::vector<nn::StateEntry>& expected, const nn::NamedTensors& given,
                       const std::string& context) {
  std::vector<std::string> problems;
  std::unordered_set<std::string> names;
  for (const nn::StateEntry& e : expected) {
    names.insert(e.name);
    const std::string name = nn::excerpt(e.name);
    if (!given.contains(e.name)) {
      problems.push_back("missing " + name + " " + shape_str(e.shape));
      continue;
    }
    const Tensor& t = given.at(e.name);
    if (t.shape() != e.shape) {
      problems.push_back(name + " has shape " + nn::excerpt(shape_str(t.shape())) +
                         ", the model's " + shape_str(e.shape));
    } else if (t.dtype() != e.dtype) {
      problems.push_back(name + " is " + dtype_name(t.dtype()) + ", the model's " +
                         dtype_name(e.dtype));
    }
  }
  for (const auto& [name, tensor] : given) {
    if (!names.count(name)) problems.push_back("unexpected " + nn::excerpt(name));
  }
  if (problems.empty()) return;
  constexpr size_t kListed = 3;  // each may quote an 80-character name
  std::string list;
  for (size_t i = 0; i < problems.size() && i < kListed; ++i) list += (i ? "; " : "") + problems[i];
  if (problems.size() > kListed)
    list += "; and " + std::to_string(problems.size() - kListed) + " more";
  LOOM_FAIL(context, ": ", list);
}

nn::ModulePtr rebuild_model(const TensorFile& file, const std::string& prefix,
                            const std::string& path) {
  const std::string& version = require_metadata(file.metadata, "loom.format_version", path);
  LOOM_CHECK(version == kFormatVersion, path, ": loom format version ", nn::excerpt(version),
             " is not supported (this build reads version ", kFormatVersion, ")");
  const std::string& spec = require_metadata(file.metadata, "loom.spec", path);
  nn::NamedTensors state;
  for (const auto& [name, tensor] : file.tensors) {
    if (name.compare(0, prefix.size(), prefix) == 0)
      state.insert(name.substr(prefix.size()), tensor);
  }
  const std::string misfit =
      path + ": the weights do not fit the architecture in its spec (a file of another model?)";
  auto unbuildable = [&](const Error& e) {
    return Error(path + ": cannot rebuild the model from its spec: " + e.what());
  };
  // First from the spec alone: a 1.6 MB file whose spec asks for Linear(20000, 20000) must not
  // make loom allocate and initialise 3.3 GB before it finds out.
  nn::PredictedState predicted;
  try {
    predicted = nn::spec_state(spec);
  } catch (const Error& e) {
    throw unbuildable(e);
  }
  check_tensors_fit(predicted.entries, outside(state, predicted.unpredicted), misfit);
  nn::ModulePtr model;
  try {
    model = nn::from_spec(spec);
  } catch (const Error& e) {
    throw unbuildable(e);
  }
  // Again from the model, for the layers spec_state could not predict; like the first, it
  // refuses the dtype conversions load_state_dict would make.
  check_tensors_fit(model->state_layout(), state, misfit);
  try {
    model->load_state_dict(state, /*strict=*/true);
  } catch (const Error& e) {
    throw Error(misfit + ": " + nn::excerpt(e.what(), 4 * nn::kMaxExcerpt));
  }
  return model;
}

}  // namespace detail

PreparedFile prepare_model_file(const std::string& path, const nn::Module& model,
                                const Preprocessing& preprocessing, const Metadata& extra) {
  Metadata metadata = detail::model_metadata(model, preprocessing, "model");
  metadata.insert(extra.begin(), extra.end());  // keeps the description's own entries
  auto snapshot = std::make_shared<const SafetensorsSnapshot>(model.state_dict(), metadata);
  return PreparedFile(path, [snapshot](const ByteSink& sink) { snapshot->write(sink); });
}

void save_model(const std::string& path, const nn::Module& model,
                const Preprocessing& preprocessing, const Metadata& extra) {
  write_file_atomically(prepare_model_file(path, model, preprocessing, extra));
}

LoadedModel load_model(const std::string& path, Device device) {
  LoadedModel out;
  TensorFile file = load_safetensors(path);
  const std::string& kind = detail::require_metadata(file.metadata, "loom.kind", path);
  LOOM_CHECK(kind == "model" || kind == "checkpoint", path, ": unknown loom.kind \"",
             nn::excerpt(kind), "\" (expected model or checkpoint)");
  out.preprocessing = Preprocessing::from_json(
      detail::require_metadata(file.metadata, "loom.preprocessing", path), path);
  out.model = detail::rebuild_model(file, kind == "checkpoint" ? "model." : "", path);
  const std::optional<int64_t> channels = input_channels(*out.model);
  LOOM_CHECK(!channels || *channels == out.preprocessing.channels, path,
             ": the preprocessing gives ", out.preprocessing.channels,
             out.preprocessing.channels == 1 ? " channel" : " channels",
             " but the model's first layer takes ", *channels);
  out.metadata = std::move(file.metadata);
  out.model->to(device);
  out.model->eval();
  return out;
}

}  // namespace loom::io
