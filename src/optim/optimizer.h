// The Optimizer base of loom::optim: parameter groups with their hyperparameters, zero_grad,
// per-parameter state, and state_dict()/load_state_dict() for checkpoints. SGD, Adam and AdamW
// derive from it and only say how one group of parameters is updated.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::optim {

// Where Adam adds epsilon (see adam.h for the formulas). Both agree once bias correction has
// faded; early steps differ.
enum class EpsilonPlacement { PyTorch, Keras };

// The hyperparameters of every optimizer in one struct; each optimizer reads the fields it
// uses and ignores the others. Chain the setters: GroupOptions().with_lr(0.1).with_momentum(0.9).
struct GroupOptions {
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;                                       // SGD
  double dampening = 0.0;                                      // SGD
  bool nesterov = false;                                       // SGD
  double beta1 = 0.9;                                          // Adam, AdamW
  double beta2 = 0.999;                                        // Adam, AdamW
  double eps = 1e-8;                                           // Adam, AdamW
  EpsilonPlacement eps_placement = EpsilonPlacement::PyTorch;  // Adam, AdamW

  GroupOptions& with_lr(double v) {
    lr = v;
    return *this;
  }
  GroupOptions& with_weight_decay(double v) {
    weight_decay = v;
    return *this;
  }
  GroupOptions& with_momentum(double v) {
    momentum = v;
    return *this;
  }
  GroupOptions& with_dampening(double v) {
    dampening = v;
    return *this;
  }
  GroupOptions& with_nesterov(bool v = true) {
    nesterov = v;
    return *this;
  }
  GroupOptions& with_betas(double b1, double b2) {
    beta1 = b1;
    beta2 = b2;
    return *this;
  }
  GroupOptions& with_eps(double v) {
    eps = v;
    return *this;
  }
  GroupOptions& with_eps_placement(EpsilonPlacement v) {
    eps_placement = v;
    return *this;
  }
};

// Parameters that share hyperparameters. Without options the group takes the optimizer's.
struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<GroupOptions> options;
};

// A snapshot of an optimizer for checkpoints. Tensors are copies from state_dict() (later steps
// do not change them) and the buffers themselves from state_references(), named
// "state.<i>.<buffer>" where i counts parameters across groups in order; scalars hold the step
// counts ("state.<i>.step") and each group's hyperparameters ("group.<g>.lr").
struct OptimizerState {
  std::string optimizer;  // "SGD", "Adam", "AdamW": load_state_dict refuses another type
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> scalars;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; parameters whose grad is undefined are
  // skipped (their state and step count stay as they are), as in PyTorch.
  void step();
  // Drops every gradient (set_to_none, the default: the next backward() allocates fresh ones)
  // or fills them with zeros.
  void zero_grad(bool set_to_none = true);

  const std::string& name() const { return name_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Adds parameters with their own options (the optimizer's defaults when absent).
  void add_param_group(ParamGroup group);
  // The learning rate of one group; set_lr without a group sets every group (schedulers use
  // set_lr(group, lr) to scale each group from its own base).
  double lr(size_t group = 0) const;
  void set_lr(double lr);
  void set_lr(size_t group, double lr);
  const GroupOptions& options(size_t group = 0) const;

  // Number of steps taken by parameter i (counted across groups in order).
  int64_t step_count(size_t param_index) const;

  OptimizerState state_dict() const;
  // state_dict() without its copies: the tensors are the optimizer's own buffers, which the next
  // step() changes in place. For a caller that copies them before then (a checkpoint's snapshot
  // does), so they are copied once, not twice.
  OptimizerState state_references() const;
  // Restores hyperparameters, step counts and buffers. Throws loom::Error (and changes nothing)
  // when the type, the number of groups or parameters, a buffer's shape, or a key differs.
  void load_state_dict(const OptimizerState& state);

 protected:
  // Per-parameter state: the step count and named buffers shaped like the parameter.
  struct ParamState {
    int64_t step = 0;
    std::map<std::string, Tensor> buffers;
  };
  // One parameter due for an update, with its state; grad has the param's shape and device.
  struct Slot {
    Tensor param;
    Tensor grad;
    ParamState* state;
  };

  Optimizer(std::string name, const GroupOptions& defaults);
  // Called from the concrete optimizer's constructor (check_options is virtual, so not from
  // ours): adds the groups, each checked.
  void init_groups(std::vector<ParamGroup> groups);

  // Updates one group's due parameters in place; each slot's step count is already advanced.
  virtual void update_group(const GroupOptions& options, std::vector<Slot>& slots) = 0;
  // Splits slots into runs that one fused update can take: same device, dtype and step count.
  static std::vector<std::vector<Slot*>> partition(std::vector<Slot>& slots);
  // The slot's state buffer `name`, created as zeros shaped like the parameter on first use.
  static Tensor& buffer(Slot& slot, const std::string& name);

  // Throws loom::Error naming the optimizer and the value when options are invalid.
  virtual void check_options(const GroupOptions& options) const = 0;
  // The buffer names a parameter's state holds once it has stepped (load_state_dict checks them).
  virtual std::vector<std::string> buffer_names(const GroupOptions& options) const = 0;

 private:
  OptimizerState state(bool copy) const;
  void check_params(const std::vector<Tensor>& params) const;

  std::string name_;
  GroupOptions defaults_;
  std::vector<ParamGroup> groups_;  // options always set here
  std::vector<ParamState> states_;  // one per parameter, across groups in order
};

}  // namespace loom::optim
