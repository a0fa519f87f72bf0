// Linear (Keras: Dense): y = x W^T + b with W [out_features, in_features], PyTorch's layout.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/nn/module.h"
#include "loom/nn/shape_rule.h"

namespace loom::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Init init = Init::PyTorch,
         Generator* gen = nullptr);

  // x [..., in_features] -> [..., out_features]
  Tensor forward(const Tensor& x) override;

  std::string type_name() const override { return "Linear"; }
  std::string config_json() const override;
  static std::shared_ptr<Linear> from_config(const std::string& config_json);
  // The state_layout() of from_config(config_json), without building it (see nn::spec_state).
  static std::vector<StateEntry> state_of_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  Tensor weight;  // [out_features, in_features]
  Tensor bias;    // [out_features], undefined without bias

 protected:
  void reset_own_parameters(Init scheme, Generator* gen) override;

 private:
  int64_t in_features_;
  int64_t out_features_;
};

// Keras' name for the same layer.
using Dense = Linear;

}  // namespace loom::nn
