// Model files: save_model / load_model over safetensors with the spec in the metadata.
#include "io/model_file.h"

#include <nlohmann/json.hpp>

#include "nn/spec.h"

namespace loom::io {

using nlohmann::json;

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
  Preprocessing p;
  std::string interpolation;
  try {
    const json j = json::parse(text);
    p.height = j.at("height").get<int64_t>();
    p.width = j.at("width").get<int64_t>();
    p.channels = j.at("channels").get<int64_t>();
    p.rescale = j.at("rescale").get<double>();
    p.class_names = j.at("class_names").get<std::vector<std::string>>();
    p.mean = j.value("mean", std::vector<double>{});
    p.std = j.value("std", std::vector<double>{});
    interpolation = j.value("interpolation", std::string("nearest"));  // older files: nearest
  } catch (const json::exception& e) {
    throw Error(source + ": malformed loom.preprocessing metadata: " + e.what());
  }
  LOOM_CHECK(p.height > 0 && p.width > 0 && p.height <= 65536 && p.width <= 65536, source,
             ": preprocessing input size ", p.height, "x", p.width, " is out of range");
  const std::optional<data::Interpolation> parsed = interpolation_from_name(interpolation);
  LOOM_CHECK(parsed.has_value(), source, ": preprocessing interpolation \"", interpolation,
             "\" is unknown; expected nearest, bilinear or area");
  p.interpolation = *parsed;
  LOOM_CHECK(p.channels == 1 || p.channels == 3, source, ": preprocessing has ", p.channels,
             " channels; expected 1 or 3");
  LOOM_CHECK(p.mean.size() == p.std.size() && (p.mean.empty() || p.mean.size() == size_t(p.channels)),
             source, ": preprocessing mean/std have ", p.mean.size(), "/", p.std.size(),
             " values for ", p.channels, " channels");
  return p;
}

namespace detail {

Metadata model_metadata(const nn::Module& model, const Preprocessing& preprocessing, const std::string& kind) {
  return {{"format", "pt"},  // Hugging Face's convention for PyTorch-named weights
          {"loom.kind", kind},
          {"loom.format_version", kFormatVersion},
          {"loom.spec", model.spec_json()},
          {"loom.preprocessing", preprocessing.to_json()}};
}

const std::string& require_metadata(const Metadata& metadata, const std::string& key, const std::string& path) {
  const auto it = metadata.find(key);
  LOOM_CHECK(it != metadata.end(), path, ": not a loom model file (no \"", key, "\" in its metadata)");
  return it->second;
}

nn::ModulePtr rebuild_model(const TensorFile& file, const std::string& prefix, const std::string& path) {
  const std::string& version = require_metadata(file.metadata, "loom.format_version", path);
  LOOM_CHECK(version == kFormatVersion, path, ": loom format version ", version,
             " is not supported (this build reads version ", kFormatVersion, ")");
  nn::ModulePtr model;
  try {
    model = nn::from_spec(require_metadata(file.metadata, "loom.spec", path));
  } catch (const Error& e) {
    throw Error(path + ": cannot rebuild the model from its spec: " + e.what());
  }
  nn::NamedTensors state;
  for (const auto& [name, tensor] : file.tensors) {
    if (name.compare(0, prefix.size(), prefix) == 0) state.insert(name.substr(prefix.size()), tensor);
  }
  try {
    model->load_state_dict(state, /*strict=*/true);
  } catch (const Error& e) {
    throw Error(path + ": the weights do not fit the architecture in its spec (a file of "
                "another model?): " + e.what());
  }
  return model;
}

}  // namespace detail

void save_model(const std::string& path, const nn::Module& model, const Preprocessing& preprocessing) {
  NamedTensors tensors;
  for (const auto& [name, tensor] : model.state_dict()) tensors.emplace_back(name, tensor);
  save_safetensors(path, tensors, detail::model_metadata(model, preprocessing, "model"));
}

LoadedModel load_model(const std::string& path, Device device) {
  LoadedModel out;
  TensorFile file = load_safetensors(path);
  const std::string& kind = detail::require_metadata(file.metadata, "loom.kind", path);
  LOOM_CHECK(kind == "model" || kind == "checkpoint", path, ": unknown loom.kind \"", kind,
             "\" (expected model or checkpoint)");
  out.model = detail::rebuild_model(file, kind == "checkpoint" ? "model." : "", path);
  out.preprocessing = Preprocessing::from_json(
      detail::require_metadata(file.metadata, "loom.preprocessing", path), path);
  out.metadata = std::move(file.metadata);
  out.model->to(device);
  out.model->eval();
  return out;
}

}  // namespace loom::io
