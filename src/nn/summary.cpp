// Sequential::summarize/summary: a real forward pass of one random sample, layer by layer.
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

}  // namespace

std::vector<LayerSummary> Sequential::summarize(const Shape& input_shape) {
  Shape batched{1};
  batched.insert(batched.end(), input_shape.begin(), input_shape.end());

  EvalModeGuard eval_mode(*this);
  NoGradGuard no_grad;
  Generator gen(0);
  const std::vector<Tensor> params = parameters();
  const DType dtype = params.empty() ? kFloat32 : params.front().dtype();
  Tensor x = randn(batched, TensorOptions(dtype).device(device()), &gen);
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

}  // namespace loom::nn
