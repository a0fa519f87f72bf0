// Dropout: in training, zeroes each element with probability p and scales the rest by
// 1 / (1 - p); identity in eval. Masks come from loom's default generator (seed it with
// manual_seed for reproducible runs).
#pragma once

#include <memory>
#include <string>

#include "loom/nn/module.h"

namespace loom::nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Dropout"; }
  std::string config_json() const override;
  static std::shared_ptr<Dropout> from_config(const std::string& config_json);
  double p() const { return p_; }

 private:
  double p_;
};

}  // namespace loom::nn
