// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay): two explicit
// optimizers, since the two decays train differently (Loshchilov & Hutter, 2019).
#pragma once

#include <utility>

#include "loom/optim/optimizer.h"
#include "loom/optim/options.h"

namespace loom::optim {

// Reads lr, beta1, beta2, eps, eps_placement, weight_decay of GroupOptions. At step t with
// gradient g:
//   g += weight_decay * p                                  (Adam only: L2 decay)
//   p -= lr * weight_decay * p                             (AdamW only: decoupled decay)
//   m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
//   bc1 = 1 - beta1^t;             bc2 = 1 - beta2^t
//   PyTorch (default): p -= lr * (m / bc1) / (sqrt(v / bc2) + eps)
//   Keras:             p -= lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps)
// The Keras placement equals the PyTorch one with eps scaled by 1/sqrt(bc2), so it damps the
// first steps more. Keras' own default eps is 1e-7 (ours 1e-8, PyTorch's): set it with with_eps.
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, const GroupOptions& options = GroupOptions());
  explicit Adam(std::vector<ParamGroup> groups, const GroupOptions& defaults = GroupOptions());
  // libtorch's forms: Adam(model->parameters(), 1e-3), Adam(params, AdamOptions(1e-3).betas(...)).
  Adam(std::vector<Tensor> params, double lr)
      : Adam(std::move(params), GroupOptions().with_lr(lr)) {}
  Adam(std::vector<Tensor> params, const AdamOptions& options)
      : Adam(std::move(params), options.group_options()) {}
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
      : Adam(std::move(groups), defaults.group_options()) {}

 protected:
  Adam(const char* name, std::vector<ParamGroup> groups, const GroupOptions& defaults,
       bool decoupled);
  void update_group(const GroupOptions& options, std::vector<Slot>& slots) override;
  void check_options(const GroupOptions& options) const override;
  std::vector<std::string> buffer_names(const GroupOptions& options) const override;

 private:
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  // PyTorch's default decoupled weight decay.
  static GroupOptions default_options() { return GroupOptions().with_weight_decay(1e-2); }
  explicit AdamW(std::vector<Tensor> params, const GroupOptions& options = default_options());
  explicit AdamW(std::vector<ParamGroup> groups, const GroupOptions& defaults = default_options());
  // libtorch's forms; AdamW(params, lr) keeps the default decay 1e-2.
  AdamW(std::vector<Tensor> params, double lr)
      : AdamW(std::move(params), default_options().with_lr(lr)) {}
  AdamW(std::vector<Tensor> params, const AdamWOptions& options)
      : AdamW(std::move(params), options.group_options()) {}
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
      : AdamW(std::move(groups), defaults.group_options()) {}
};

}  // namespace loom::optim
