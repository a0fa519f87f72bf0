// Sequential: chaining, naming by index, and its spec (each layer's own spec plus its name).
#include "loom/nn/sequential.h"

#include <nlohmann/json.hpp>
#include <typeinfo>

#include "loom/nn/activation.h"
#include "loom/nn/batch_norm.h"
#include "loom/nn/conv.h"
#include "loom/nn/spec.h"

namespace loom::nn {

Sequential::Sequential(std::initializer_list<ModulePtr> layers) {
  for (const ModulePtr& layer : layers) add(layer);
}

Sequential& Sequential::add(ModulePtr layer) {
  return add(std::to_string(size()), std::move(layer));
}

Sequential& Sequential::add(const std::string& name, ModulePtr layer) {
  add_child(name, std::move(layer));
  return *this;
}

const ModulePtr& Sequential::operator[](size_t index) const {
  LOOM_CHECK(index < size(), "Sequential: layer index ", index, " out of range for ", size(),
             " layers");
  return named_children()[index].second;
}

Tensor Sequential::forward(const Tensor& input) {
  LOOM_CHECK(size() > 0, "Sequential: forward on a model without layers");
  const auto& layers = named_children();
  Tensor x = input;
  for (size_t i = 0; i < layers.size(); ++i) {
    // A Conv2d or a BatchNorm2d and the ReLU after it run as one op: the relu in the same pass.
    // Only loom's own types: a subclass may have a forward of its own.
    Module& layer = *layers[i].second;
    if (i + 1 < layers.size() && typeid(*layers[i + 1].second) == typeid(ReLU)) {
      if (typeid(layer) == typeid(Conv2d)) {
        x = static_cast<Conv2d&>(layer).forward_relu(x);
        ++i;
        continue;
      }
      if (typeid(layer) == typeid(BatchNorm2d)) {
        x = static_cast<BatchNorm2d&>(layer).forward_relu(x);
        ++i;
        continue;
      }
    }
    x = layers[i].second->forward(x);
  }
  return x;
}

std::string Sequential::config_json() const {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& [name, layer] : named_children()) {
    nlohmann::json entry = nlohmann::json::parse(layer->spec_json());
    entry["name"] = name;
    layers.push_back(entry);
  }
  return nlohmann::json{{"layers", layers}}.dump();
}

std::shared_ptr<Sequential> Sequential::from_config(const std::string& config_json) {
  // Built as a whole spec, so from_spec's walk builds every nested layer from one parse. The
  // text cannot change the type: a second "type" key is refused as a duplicate.
  auto model = std::dynamic_pointer_cast<Sequential>(
      from_spec(R"({"type":"Sequential","config":)" + config_json + "}"));
  LOOM_ASSERT(model != nullptr);
  return model;
}

}  // namespace loom::nn
