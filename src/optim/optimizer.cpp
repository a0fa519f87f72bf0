// The Optimizer base: parameter checks, the step loop that gathers due parameters and hands
// them to the subclass, zero_grad, learning rates, and checkpoints of state and options.
#include "loom/optim/optimizer.h"

#include <set>
#include <utility>

#include "loom/tensor/autograd.h"
#include "loom/tensor/cuda/graph.h"

namespace loom::optim {

namespace {

std::string state_key(size_t index, const std::string& what) {
  return "state." + std::to_string(index) + "." + what;
}
std::string group_key(size_t group, const std::string& what) {
  return "group." + std::to_string(group) + "." + what;
}

// The options as named scalars, and back: one table so saving and loading cannot drift apart.
std::vector<std::pair<std::string, double>> options_to_scalars(const GroupOptions& o) {
  return {{"lr", o.lr},
          {"weight_decay", o.weight_decay},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"nesterov", o.nesterov ? 1.0 : 0.0},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"eps_placement", o.eps_placement == EpsilonPlacement::Keras ? 1.0 : 0.0}};
}

GroupOptions options_from_scalars(const std::map<std::string, double>& values) {
  GroupOptions o;
  o.lr = values.at("lr");
  o.weight_decay = values.at("weight_decay");
  o.momentum = values.at("momentum");
  o.dampening = values.at("dampening");
  o.nesterov = values.at("nesterov") != 0.0;
  o.beta1 = values.at("beta1");
  o.beta2 = values.at("beta2");
  o.eps = values.at("eps");
  o.eps_placement =
      values.at("eps_placement") != 0.0 ? EpsilonPlacement::Keras : EpsilonPlacement::PyTorch;
  return o;
}

// Reads a scalar that must be present, naming the optimizer and the key otherwise.
double required_scalar(const OptimizerState& state, const std::string& key, const std::string& op) {
  auto it = state.scalars.find(key);
  LOOM_CHECK(it != state.scalars.end(), op, ".load_state_dict: missing scalar \"", key, "\"");
  return it->second;
}

}  // namespace

Optimizer::Optimizer(std::string name, const GroupOptions& defaults)
    : name_(std::move(name)), defaults_(defaults) {}

void Optimizer::init_groups(std::vector<ParamGroup> groups) {
  LOOM_CHECK(!groups.empty(), name_, ": got an empty list of parameter groups");
  for (ParamGroup& group : groups) add_param_group(std::move(group));
}

void Optimizer::check_params(const std::vector<Tensor>& params) const {
  LOOM_CHECK(!params.empty(), name_, ": got an empty parameter list");
  std::set<const TensorImpl*> seen;
  for (const ParamGroup& group : groups_) {
    for (const Tensor& p : group.params) seen.insert(p.impl().get());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    LOOM_CHECK(p.defined(), name_, ": parameter ", i, " is an undefined tensor");
    LOOM_CHECK(is_floating(p.dtype()), name_, ": parameter ", i, " has dtype ",
               dtype_name(p.dtype()), "; only floating-point tensors can be optimized");
    LOOM_CHECK(p.is_leaf(), name_, ": parameter ", i, " of shape ", shape_str(p.shape()),
               " is not a leaf tensor (it has a grad_fn); optimize the leaf it comes from");
    LOOM_CHECK(seen.insert(p.impl().get()).second, name_, ": parameter ", i, " of shape ",
               shape_str(p.shape()), " appears more than once");
  }
}

void Optimizer::add_param_group(ParamGroup group) {
  check_params(group.params);
  if (!group.options) group.options = defaults_;
  check_options(*group.options);
  states_.resize(states_.size() + group.params.size());
  groups_.push_back(std::move(group));
}

void Optimizer::step() {
  NoGradGuard no_grad;
  size_t index = 0;
  for (ParamGroup& group : groups_) {
    std::vector<Slot> slots;
    std::vector<std::pair<Tensor, Tensor>> write_back;  // (parameter, contiguous copy updated)
    for (const Tensor& p : group.params) {
      ParamState& state = states_[index++];
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      LOOM_CHECK(grad.shape() == p.shape(), name_, ".step: gradient of shape ",
                 shape_str(grad.shape()), " for parameter ", index - 1, " of shape ",
                 shape_str(p.shape()));
      LOOM_CHECK(grad.device() == p.device() && grad.dtype() == p.dtype(), name_,
                 ".step: gradient (", dtype_name(grad.dtype()), ", ", grad.device().str(),
                 ") of parameter ", index - 1, " differs from the parameter (",
                 dtype_name(p.dtype()), ", ", p.device().str(), ")");
      // NCHW and channels-last parameters (Module::to) are updated in place: the update walks
      // memory in order, with the gradient and the state in the parameter's layout.
      Tensor work = p;
      if (!p.is_contiguous(p.suggest_memory_format())) {
        // A graph's refresh reruns this loop without launching: a copy here would run for real.
        if (p.is_cuda()) {
          cuda::check_not_capturing(
              p.device().index, "an optimizer step on a non-contiguous parameter",
              "its update goes through a copy; make the parameter contiguous");
        }
        work = p.contiguous();
        write_back.emplace_back(p, work);
      }
      ++state.step;
      slots.push_back(Slot{work, grad.contiguous(work.suggest_memory_format()), &state});
    }
    if (!slots.empty()) update_group(*group.options, slots);
    for (auto& [param, updated] : write_back) {
      Tensor target = param;
      target.copy_(updated);
    }
  }
}

std::vector<std::vector<Optimizer::Slot*>> Optimizer::partition(std::vector<Slot>& slots) {
  std::vector<std::vector<Slot*>> parts;
  for (Slot& slot : slots) {
    bool placed = false;
    for (auto& part : parts) {
      const Slot& head = *part.front();
      if (head.param.device() == slot.param.device() && head.param.dtype() == slot.param.dtype() &&
          head.state->step == slot.state->step) {
        part.push_back(&slot);
        placed = true;
        break;
      }
    }
    if (!placed) parts.push_back({&slot});
  }
  return parts;
}

Tensor& Optimizer::buffer(Slot& slot, const std::string& name) {
  Tensor& buf = slot.state->buffers[name];
  const MemoryFormat format = slot.param.suggest_memory_format();
  if (!buf.defined()) {
    buf = empty(slot.param.shape(), slot.param.options(), format).zero_();
  } else if (!buf.is_contiguous(format)) {
    // The state came in another layout (loaded, or kept across Module::to(MemoryFormat)).
    if (buf.is_cuda()) {
      cuda::check_not_capturing(
          buf.device().index, "an optimizer state in another layout than its parameter's",
          "run one step before capturing, or lay out the model before building the optimizer");
    }
    buf = buf.contiguous(format);
  }
  return buf;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& group : groups_) {
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        Tensor grad = p.grad();
        grad.zero_();
      }
    }
  }
}

double Optimizer::lr(size_t group) const { return options(group).lr; }

const GroupOptions& Optimizer::options(size_t group) const {
  LOOM_CHECK(group < groups_.size(), name_, ": parameter group ", group, " does not exist (",
             groups_.size(), " groups)");
  return *groups_[group].options;
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
  GroupOptions updated = options(group);
  updated.lr = lr;
  check_options(updated);
  groups_[group].options = updated;
}

int64_t Optimizer::step_count(size_t param_index) const {
  LOOM_CHECK(param_index < states_.size(), name_, ": parameter ", param_index, " does not exist (",
             states_.size(), " parameters)");
  return states_[param_index].step;
}

OptimizerState Optimizer::state_dict() const { return state(/*copy=*/true); }

OptimizerState Optimizer::state_references() const { return state(/*copy=*/false); }

OptimizerState Optimizer::state(bool copy) const {
  NoGradGuard no_grad;
  OptimizerState out;
  out.optimizer = name_;
  size_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const auto& [key, value] : options_to_scalars(*groups_[g].options)) {
      out.scalars[group_key(g, key)] = value;
    }
    out.scalars[group_key(g, "num_params")] = static_cast<double>(groups_[g].params.size());
    for (size_t k = 0; k < groups_[g].params.size(); ++k, ++index) {
      const ParamState& state = states_[index];
      out.scalars[state_key(index, "step")] = static_cast<double>(state.step);
      for (const auto& [name, buf] : state.buffers)
        out.tensors[state_key(index, name)] = copy ? buf.clone() : buf;
    }
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  NoGradGuard no_grad;
  const std::string op = name_;
  LOOM_CHECK(state.optimizer == name_, op, ".load_state_dict: the state was saved by a ",
             state.optimizer.empty() ? std::string("(unnamed)") : state.optimizer, " optimizer");
  // Everything is checked and built aside first, so a failed load changes nothing.
  std::set<std::string> used_scalars, used_tensors;
  auto scalar = [&](const std::string& key) {
    used_scalars.insert(key);
    return required_scalar(state, key, op);
  };
  std::vector<GroupOptions> options;
  for (size_t g = 0;; ++g) {
    if (!state.scalars.count(group_key(g, "num_params"))) break;
    LOOM_CHECK(g < groups_.size(), op, ".load_state_dict: the state has more than ", groups_.size(),
               " parameter groups");
    const double saved = scalar(group_key(g, "num_params"));
    LOOM_CHECK(saved == static_cast<double>(groups_[g].params.size()), op,
               ".load_state_dict: parameter group ", g, " has ", groups_[g].params.size(),
               " parameters but the state has ", saved);
    std::map<std::string, double> values;
    for (const auto& [key, unused] : options_to_scalars(GroupOptions()))
      values[key] = scalar(group_key(g, key));
    options.push_back(options_from_scalars(values));
    check_options(options.back());
  }
  LOOM_CHECK(options.size() == groups_.size(), op, ".load_state_dict: the optimizer has ",
             groups_.size(), " parameter groups but the state has ", options.size());

  std::vector<ParamState> states(states_.size());
  size_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const Tensor& p : groups_[g].params) {
      ParamState& loaded = states[index];
      const double step = scalar(state_key(index, "step"));
      LOOM_CHECK(step >= 0 && step == static_cast<double>(static_cast<int64_t>(step)), op,
                 ".load_state_dict: \"", state_key(index, "step"), "\" is ", step,
                 ", not a step count");
      loaded.step = static_cast<int64_t>(step);
      if (loaded.step > 0) {
        for (const std::string& name : buffer_names(options[g])) {
          const std::string key = state_key(index, name);
          auto it = state.tensors.find(key);
          LOOM_CHECK(it != state.tensors.end(), op, ".load_state_dict: missing tensor \"", key,
                     "\"");
          LOOM_CHECK(it->second.defined() && it->second.shape() == p.shape(), op,
                     ".load_state_dict: \"", key, "\" has shape ",
                     it->second.defined() ? shape_str(it->second.shape()) : "(undefined)",
                     " but parameter ", index, " has shape ", shape_str(p.shape()));
          Tensor buf = empty(p.shape(), p.options(), p.suggest_memory_format());
          buf.copy_(it->second);
          loaded.buffers[name] = buf;
          used_tensors.insert(key);
        }
      }
      ++index;
    }
  }
  for (const auto& [key, unused] : state.scalars) {
    LOOM_CHECK(used_scalars.count(key), op, ".load_state_dict: unexpected scalar \"", key, "\"");
  }
  for (const auto& [key, unused] : state.tensors) {
    LOOM_CHECK(used_tensors.count(key), op, ".load_state_dict: unexpected tensor \"", key, "\"");
  }
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = options[g];
  states_ = std::move(states);
}

}  // namespace loom::optim
