// BatchNorm2d over NCHW inputs: per-channel weight (gamma) and bias (beta); buffers
// running_mean, running_var and num_batches_tracked. Training normalises with the batch's
// statistics and updates the running ones (momentum as in PyTorch: new = (1 - m) old + m batch);
// eval normalises with the running statistics.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/nn/module.h"
#include "loom/nn/shape_rule.h"

namespace loom::nn {

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1);

  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) as one op (loom::batch_norm_relu); Sequential runs a BatchNorm2d and the
  // ReLU after it so.
  Tensor forward_relu(const Tensor& x);

  std::string type_name() const override { return "BatchNorm2d"; }
  std::string config_json() const override;
  static std::shared_ptr<BatchNorm2d> from_config(const std::string& config_json);
  // The state_layout() of from_config(config_json), without building it (see nn::spec_state).
  static std::vector<StateEntry> state_of_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

  int64_t num_features() const { return num_features_; }

  Tensor weight;               // [C], ones
  Tensor bias;                 // [C], zeros
  Tensor running_mean;         // [C], zeros
  Tensor running_var;          // [C], ones
  Tensor num_batches_tracked;  // int64 scalar

 protected:
  // Both schemes (Keras and PyTorch) start at gamma = 1, beta = 0 and fresh running statistics.
  void reset_own_parameters(Init scheme, Generator* gen) override;

 private:
  Tensor forward_impl(const Tensor& x, bool relu);

  int64_t num_features_;
  double eps_;
  double momentum_;
  Tensor one_;  // int64 1 on the buffers' device: num_batches_tracked's increment
};

}  // namespace loom::nn
