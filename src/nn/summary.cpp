// Sequential::summarize/summary and nn::summary: a real forward pass of one random sample, layer
// by layer for a Sequential, as a whole for any other module.
#include "loom/nn/summary.h"

#include <cstdio>
#include <sstream>

#include "loom/nn/sequential.h"
#include "loom/tensor/autograd.h"
#include "loom/tensor/random.h"

namespace loom::nn {

namespace {

std::string shape_with_batch(const Shape& shape) {
  std::string out = "(None";
  for (size_t i = 1; i < shape.size(); ++i) out += ", " + std::to_string(shape[i]);
  return out + ")";
}

// 1234567 -> "1,234,567", as Keras prints counts.
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

// One random sample of `input_shape` with a batch dimension, in the model's dtype and device.
Tensor sample_input(const Module& model, const Shape& input_shape) {
  Shape batched{1};
  batched.insert(batched.end(), input_shape.begin(), input_shape.end());
  Generator gen(0);
  const std::vector<Tensor> params = model.parameters();
  const DType dtype = params.empty() ? kFloat32 : params.front().dtype();
  return randn(batched, TensorOptions(dtype).device(model.device()), &gen);
}

}  // namespace

std::vector<LayerSummary> Sequential::summarize(const Shape& input_shape) {
  EvalModeGuard eval_mode(*this);
  NoGradGuard no_grad;
  Tensor x = sample_input(*this, input_shape);
  std::vector<LayerSummary> rows;
  for (const auto& [name, layer] : named_children()) {
    x = layer->forward(x);
    rows.push_back({name, layer->type_name(), x.shape(), layer->num_parameters()});
  }
  return rows;
}

std::string Sequential::summary(const Shape& input_shape) {
  const std::vector<LayerSummary> rows = summarize(input_shape);
  std::ostringstream out;
  const std::string rule(72, '_');
  const std::string thick(72, '=');
  char line[256];
  std::snprintf(line, sizeof line, "%-32s %-26s %12s\n", "Layer (type)", "Output Shape", "Param #");
  out << "Model: \"" << type_name() << "\"\n" << rule << "\n" << line << thick << "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::string label = rows[r].name + " (" + rows[r].type + ")";
    std::snprintf(line, sizeof line, "%-32s %-26s %12s\n", label.c_str(),
                  shape_with_batch(rows[r].output_shape).c_str(),
                  with_commas(rows[r].num_parameters).c_str());
    out << line << (r + 1 < rows.size() ? rule : thick) << "\n";
  }
  const int64_t total = num_parameters(), trainable = num_parameters(true);
  out << "Total params: " << with_commas(total) << "\n"
      << "Trainable params: " << with_commas(trainable) << "\n"
      << "Non-trainable params: " << with_commas(total - trainable) << "\n"
      << rule << "\n";
  return out.str();
}

std::string summary(Module& model, const Shape& input_shape) {
  if (auto* sequential = dynamic_cast<Sequential*>(&model)) return sequential->summary(input_shape);
  Shape output;
  {
    EvalModeGuard eval_mode(model);
    NoGradGuard no_grad;
    output = model.forward(sample_input(model, input_shape)).shape();
  }
  std::ostringstream out;
  const std::string rule(72, '_'), thick(72, '=');
  char line[256];
  std::snprintf(line, sizeof line, "%-45s %25s\n", "Module (type)", "Param #");
  out << "Model: \"" << model.type_name() << "\"\n" << rule << "\n" << line << thick << "\n";
  int64_t in_children = 0;
  for (const auto& [name, child] : model.named_children()) {
    const std::string label = name + " (" + child->type_name() + ")";
    std::snprintf(line, sizeof line, "%-45s %25s\n", label.c_str(),
                  with_commas(child->num_parameters()).c_str());
    out << line << rule << "\n";
    in_children += child->num_parameters();
  }
  const int64_t total = model.num_parameters(), trainable = model.num_parameters(true);
  if (total > in_children) {  // parameters the module registers itself
    std::snprintf(line, sizeof line, "%-45s %25s\n", "(its own parameters)",
                  with_commas(total - in_children).c_str());
    out << line << rule << "\n";
  }
  out << "Output shape: " << shape_with_batch(output) << "\n"
      << "Total params: " << with_commas(total) << "\n"
      << "Trainable params: " << with_commas(trainable) << "\n"
      << "Non-trainable params: " << with_commas(total - trainable) << "\n"
      << rule << "\n";
  return out.str();
}

}  // namespace loom::nn
