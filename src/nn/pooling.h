// Pooling layers over NCHW inputs: MaxPool2d, AvgPool2d (stride defaults to the kernel, as in
// Keras and PyTorch) and GlobalAvgPool2d, which returns [N, C] like Keras'
// GlobalAveragePooling2D (the op global_avg_pool2d keeps the 1x1 plane).
#pragma once

#include <memory>
#include <string>

#include "loom/nn/module.h"
#include "loom/nn/shape_rule.h"
#include "loom/ops/pool.h"

namespace loom::nn {

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Size2 kernel, Size2 stride = 0, Size2 padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  std::string config_json() const override;
  static std::shared_ptr<MaxPool2d> from_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

 private:
  Size2 kernel_, stride_, padding_;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel, Size2 stride = 0, Size2 padding = 0,
                     bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }
  std::string config_json() const override;
  static std::shared_ptr<AvgPool2d> from_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

 private:
  Size2 kernel_, stride_, padding_;
  bool count_include_pad_;
};

class GlobalAvgPool2d : public Module {
 public:
  // [N, C, H, W] -> [N, C]
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GlobalAvgPool2d"; }
  // [C, H, W] -> [C] (see nn::SpecShapes).
  static InputFit output_shape(const Shape& example);
};

}  // namespace loom::nn
