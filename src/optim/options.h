// libtorch-shaped option types for SGD, Adam and AdamW: SGDOptions(0.1).momentum(0.9),
// AdamOptions(1e-3).betas({0.9, 0.999}).weight_decay(0). Each is a typed face of GroupOptions,
// which stays loom's own form; group_options() gives the GroupOptions it stands for.
#pragma once

#include <tuple>

#include "loom/optim/optimizer.h"

namespace loom::optim {

// The setters and getters every optimizer shares, returning the derived type so that chains
// keep it (AdamOptions(1e-3).weight_decay(0).betas(...)).
template <typename Derived>
class OptionsBase {
 public:
  Derived& lr(double v) {
    options_.lr = v;
    return self();
  }
  double lr() const { return options_.lr; }
  Derived& weight_decay(double v) {
    options_.weight_decay = v;
    return self();
  }
  double weight_decay() const { return options_.weight_decay; }
  const GroupOptions& group_options() const { return options_; }

 protected:
  explicit OptionsBase(const GroupOptions& options) : options_(options) {}
  Derived& self() { return static_cast<Derived&>(*this); }
  GroupOptions options_;
};

// torch::optim::SGDOptions: the learning rate has no default, as in libtorch.
class SGDOptions : public OptionsBase<SGDOptions> {
 public:
  explicit SGDOptions(double lr) : OptionsBase(GroupOptions().with_lr(lr)) {}
  SGDOptions& momentum(double v) {
    options_.momentum = v;
    return *this;
  }
  double momentum() const { return options_.momentum; }
  SGDOptions& dampening(double v) {
    options_.dampening = v;
    return *this;
  }
  double dampening() const { return options_.dampening; }
  SGDOptions& nesterov(bool v) {
    options_.nesterov = v;
    return *this;
  }
  bool nesterov() const { return options_.nesterov; }
};

// The Adam family's own fields; AdamOptions and AdamWOptions differ in their default decay.
template <typename Derived>
class AdamOptionsBase : public OptionsBase<Derived> {
 public:
  Derived& betas(const std::tuple<double, double>& v) {
    this->options_.beta1 = std::get<0>(v);
    this->options_.beta2 = std::get<1>(v);
    return this->self();
  }
  std::tuple<double, double> betas() const { return {this->options_.beta1, this->options_.beta2}; }
  Derived& eps(double v) {
    this->options_.eps = v;
    return this->self();
  }
  double eps() const { return this->options_.eps; }
  // loom's own (libtorch has PyTorch's placement only): see adam.h.
  Derived& eps_placement(EpsilonPlacement v) {
    this->options_.eps_placement = v;
    return this->self();
  }
  EpsilonPlacement eps_placement() const { return this->options_.eps_placement; }

 protected:
  using OptionsBase<Derived>::OptionsBase;
};

// torch::optim::AdamOptions: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0 (L2).
class AdamOptions : public AdamOptionsBase<AdamOptions> {
 public:
  explicit AdamOptions(double lr = 1e-3) : AdamOptionsBase(GroupOptions().with_lr(lr)) {}
};

// torch::optim::AdamWOptions: as AdamOptions with decoupled weight_decay 1e-2.
class AdamWOptions : public AdamOptionsBase<AdamWOptions> {
 public:
  explicit AdamWOptions(double lr = 1e-3)
      : AdamOptionsBase(GroupOptions().with_lr(lr).with_weight_decay(1e-2)) {}
};

}  // namespace loom::optim
