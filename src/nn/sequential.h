// Sequential: a chain of modules, built Keras-style with add() or from an initializer list.
// It describes itself as a JSON spec (layer types, configs and names) that nn::from_spec()
// rebuilds, and prints a Keras-like summary() of output shapes and parameter counts.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

// One row of Sequential::summarize(): the output of one layer for a given input.
struct LayerSummary {
  std::string name;
  std::string type;
  Shape output_shape;  // with the batch dimension first
  int64_t num_parameters = 0;
};

class Sequential : public Module {
 public:
  Sequential() = default;
  // Layers are named "0", "1", ... in order.
  Sequential(std::initializer_list<ModulePtr> layers);

  // Appends a layer named by its index (or by `name`); returns *this for chaining.
  Sequential& add(ModulePtr layer);
  Sequential& add(const std::string& name, ModulePtr layer);

  size_t size() const { return named_children().size(); }
  const ModulePtr& operator[](size_t index) const;

  Tensor forward(const Tensor& input) override;

  std::string type_name() const override { return "Sequential"; }
  // {"layers": [{"name": "0", "type": "Conv2d", "config": {...}}, ...]}
  std::string config_json() const override;
  static std::shared_ptr<Sequential> from_config(const std::string& config_json);

  // Runs one input of `input_shape` (without the batch dimension, e.g. {3, 64, 64}) through
  // the layers without recording gradients and in eval mode (BatchNorm's running statistics
  // are untouched; each module's mode is restored afterwards). Random input, batch of 1.
  std::vector<LayerSummary> summarize(const Shape& input_shape);
  // The same as a table like Keras' model.summary(), with total and trainable parameters.
  std::string summary(const Shape& input_shape);
};

}  // namespace loom::nn
