// nn::Module: the base of every layer and model. It owns named parameters (trainable leaves),
// buffers (state that is saved but not trained, e.g. BatchNorm's running statistics) and child
// modules; names nest with dots ("layer1.0.conv1.weight"). Modules are held by shared_ptr.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/nn/batch_trainer.h"
#include "loom/nn/init.h"
#include "loom/nn/named_tensors.h"
#include "loom/tensor/tensor.h"

namespace loom::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;

// One tensor of a state_dict, described: what nn::spec_state() predicts from a spec, so that a
// file's tensors can be checked before anything is built.
struct StateEntry {
  std::string name;
  Shape shape;
  DType dtype;
};

// What a non-strict load_state_dict() skipped.
struct LoadResult {
  std::vector<std::string> missing_keys;     // in the module, not in the dict
  std::vector<std::string> unexpected_keys;  // in the dict, not in the module
};

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& input) = 0;
  Tensor operator()(const Tensor& input) { return forward(input); }

  // --- architecture description: spec_json() = {"type": type_name(), "config": config_json()},
  // which nn::from_spec() turns back into a module (see nn/spec.h).
  virtual std::string type_name() const = 0;
  virtual std::string config_json() const { return "{}"; }
  std::string spec_json() const;

  // --- parameters, buffers, children (registration order; recurse adds the children's) ----
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  const std::vector<std::pair<std::string, ModulePtr>>& named_children() const { return children_; }
  std::vector<ModulePtr> children() const;
  // Calls fn on this module and then on every descendant, depth first.
  void apply(const std::function<void(Module&)>& fn);
  // Number of parameter elements; trainable_only counts those that require grad.
  int64_t num_parameters(bool trainable_only = false) const;

  // --- modes and placement -------------------------------------------------------------------
  // Sets training mode here and in every descendant (BatchNorm and Dropout read it).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves every parameter and buffer (and any .grad) in place: tensor handles taken before
  // (layer members, user copies) see the new device. Build optimizers AFTER to(): an optimizer
  // created before keeps its state buffers on the old device.
  void to(Device device);
  // Converts floating-point parameters and buffers in place (integer buffers keep their dtype).
  void to(DType dtype);
  // Lays out every 4-D parameter and buffer (and any .grad) in `format`, in place, as PyTorch's
  // module.to(memory_format=...) does: with ChannelsLast, cuDNN's NHWC convolutions read the
  // weights as they are instead of copying them to NHWC and their gradients back every step.
  // Optimizers, DDP and checkpoints take parameters in either layout; files hold NCHW order.
  void to(MemoryFormat format);
  // The device of the first parameter or buffer; the CPU for a module without any.
  Device device() const;
  // set_to_none drops each .grad (the next backward allocates it); otherwise fills with zeros.
  void zero_grad(bool set_to_none = true);

  // --- what a wrapper tells the training loop ------------------------------------------------
  // A module that trains another across ranks or devices (dist::DistributedDataParallel,
  // dist::PipelineParallel) says so here, so that train::fit never names its class.
  // The module whose weights are the trained ones: checkpoints and model files save it, so a
  // file written by N ranks or N stages is the same kind of file as one rank's.
  virtual Module& unwrapped() { return *this; }
  // Gradient accumulation: while off, backward leaves the gradients on this rank
  // (DistributedDataParallel::no_sync) and the first backward after it is back on syncs all
  // that was accumulated. Returns the previous setting; a module without ranks has nothing to
  // sync, ignores it and returns true.
  virtual bool set_gradient_sync(bool /*on*/) { return true; }
  // A model that runs a training batch's forward and backward itself returns itself here.
  virtual BatchTrainer* batch_trainer() { return nullptr; }

  // --- initialisation ---------------------------------------------------------------------
  // Re-initialises the learnable layers of this module and every descendant with `scheme`.
  void init_parameters(Init scheme, Generator* gen = nullptr);

  // --- checkpoints --------------------------------------------------------------------------
  // Parameters and buffers by dotted name; the tensors are detached and share storage.
  NamedTensors state_dict() const;
  // The names, shapes and dtypes of state_dict(), in its order.
  std::vector<StateEntry> state_layout() const;
  // Copies values into the module's tensors in place (dtype and device are converted). Throws
  // loom::Error listing the problems (the first few names of each kind and how many more):
  // missing keys, unexpected keys (both only when strict) and shape mismatches (always).
  // Nothing is copied when it throws.
  LoadResult load_state_dict(const NamedTensors& state, bool strict = true);

 protected:
  Module() = default;

  // Registers a parameter: a leaf that requires grad (a detached copy of the handle when
  // `value` has history). Returns the registered handle; keep it as the layer's member.
  Tensor register_parameter(const std::string& name, const Tensor& value,
                            bool requires_grad = true);
  Tensor register_buffer(const std::string& name, const Tensor& value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  void add_child(const std::string& name, ModulePtr module);

  // Learnable layers override this to (re)initialise their own tensors.
  virtual void reset_own_parameters(Init /*scheme*/, Generator* /*gen*/) {}

 private:
  void check_new_name(const std::string& name) const;
  void collect(NamedTensors& out, const std::string& prefix, bool params, bool recurse) const;
  void for_each_tensor(const std::function<void(Tensor&)>& fn);

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, ModulePtr>> children_;
  // Every name in the three lists, so registering is O(1): a spec of 100,000 layers builds in
  // linear time.
  std::unordered_set<std::string> names_;
  bool training_ = true;
};

// Points `target`'s implementation at `moved`'s data (storage, geometry, dtype), so every handle
// sharing the implementation (layer members, user copies, optimizers) sees the move: how
// Module::to moves tensors in place, and how DistributedDataParallel puts buffers in its arena.
void retarget(const Tensor& target, const Tensor& moved);

// Puts a module (and every descendant) in eval mode for the guard's lifetime, then restores
// each module's own mode: summary() and predict() use it so they never change training state.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(Module& module);
  ~EvalModeGuard();
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  Module& module_;
  std::vector<bool> modes_;  // preorder, as Module::apply visits
};

}  // namespace loom::nn
