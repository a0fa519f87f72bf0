// Stochastic gradient descent with momentum, dampening, Nesterov momentum and L2 weight decay,
// following PyTorch's torch.optim.SGD formulas exactly.
#pragma once

#include <utility>

#include "loom/optim/optimizer.h"
#include "loom/optim/options.h"

namespace loom::optim {

// Reads lr, momentum, dampening, nesterov, weight_decay of GroupOptions. With g the gradient:
//   g += weight_decay * p
//   b  = g on the first step, else momentum * b + (1 - dampening) * g     (when momentum != 0)
//   g  = g + momentum * b (nesterov) or b                                  (when momentum != 0)
//   p -= lr * g
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const GroupOptions& options);
  SGD(std::vector<ParamGroup> groups, const GroupOptions& defaults);
  // libtorch's form, SGD(params, SGDOptions(0.1).momentum(0.9)), and the plain SGD(params, lr).
  SGD(std::vector<Tensor> params, double lr) : SGD(std::move(params), GroupOptions().with_lr(lr)) {}
  SGD(std::vector<Tensor> params, const SGDOptions& options)
      : SGD(std::move(params), options.group_options()) {}
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
      : SGD(std::move(groups), defaults.group_options()) {}

 protected:
  void update_group(const GroupOptions& options, std::vector<Slot>& slots) override;
  void check_options(const GroupOptions& options) const override;
  std::vector<std::string> buffer_names(const GroupOptions& options) const override;
};

}  // namespace loom::optim
