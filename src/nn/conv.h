// Conv2d over NCHW inputs: weight [out_channels, in_channels, kh, kw], optional bias
// [out_channels]; stride, padding (explicit, or Padding::Same / Padding::Valid) and dilation
// as in loom::conv2d. Keras' Convolution2D(32, 3, 3) is Conv2d(C, 32, 3,
// Conv2dOptions().stride(3)).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/nn/module.h"
#include "loom/nn/shape_rule.h"
#include "loom/ops/conv.h"
#include "loom/ops/pool.h"

namespace loom::nn {

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel, const Conv2dOptions& options = {},
         bool bias = true, Init init = Init::PyTorch, Generator* gen = nullptr);

  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) in one pass over the output on CUDA (loom::conv2d_relu): Sequential calls it
  // for a Conv2d followed by a ReLU.
  Tensor forward_relu(const Tensor& x);

  std::string type_name() const override { return "Conv2d"; }
  std::string config_json() const override;
  static std::shared_ptr<Conv2d> from_config(const std::string& config_json);
  // The state_layout() of from_config(config_json), without building it (see nn::spec_state).
  static std::vector<StateEntry> state_of_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const Conv2dOptions& options() const { return options_; }

  Tensor weight;  // [out_channels, in_channels, kh, kw]
  Tensor bias;    // [out_channels], undefined without bias

 protected:
  void reset_own_parameters(Init scheme, Generator* gen) override;

 private:
  int64_t in_channels_;
  int64_t out_channels_;
  Size2 kernel_;
  Conv2dOptions options_;
};

}  // namespace loom::nn
