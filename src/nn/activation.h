// Parameterless layers: activations (ReLU, LeakyReLU, Sigmoid, Tanh, Softmax), Flatten and
// Identity. Each forwards to the op of the same name.
#pragma once

#include <memory>
#include <string>

#include "loom/nn/module.h"
#include "loom/nn/shape_rule.h"

namespace loom::nn {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ReLU"; }
};

// max(x, 0) + negative_slope * min(x, 0); PyTorch's default slope (Keras' is 0.3).
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LeakyReLU"; }
  std::string config_json() const override;
  static std::shared_ptr<LeakyReLU> from_config(const std::string& config_json);

 private:
  double negative_slope_;
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sigmoid"; }
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Tanh"; }
};

// Softmax along `dim` (default: the last, as Keras' axis=-1).
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim = -1) : dim_(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Softmax"; }
  std::string config_json() const override;
  static std::shared_ptr<Softmax> from_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

 private:
  int64_t dim_;
};

// Flattens dims start_dim..end_dim into one; the default keeps the batch: [N, C, H, W] -> [N, CHW].
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Flatten"; }
  std::string config_json() const override;
  static std::shared_ptr<Flatten> from_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

 private:
  int64_t start_dim_;
  int64_t end_dim_;
};

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "Identity"; }
};

}  // namespace loom::nn
