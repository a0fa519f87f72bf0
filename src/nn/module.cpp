// Module: registration, recursive traversal, in-place device/dtype moves and state_dict loading.
#include "loom/nn/module.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/nn/untrusted_json.h"
#include "loom/tensor/autograd.h"

namespace loom::nn {

namespace {

// The first items and how many more: a file may name thousands of tensors. Names come from
// files, so each is cut short unless the caller has (`cut` false).
std::string join(const std::vector<std::string>& names, bool cut = true) {
  constexpr size_t kListed = 10;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kListed; ++i) {
    out += (i ? ", " : "") + (cut ? excerpt(names[i]) : names[i]);
  }
  if (names.size() > kListed) out += " and " + std::to_string(names.size() - kListed) + " more";
  return out;
}

}  // namespace

std::string Module::spec_json() const {
  nlohmann::json spec;
  spec["type"] = type_name();
  spec["config"] = nlohmann::json::parse(config_json());
  return spec.dump();
}

void Module::check_new_name(const std::string& name) const {
  LOOM_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name(),
             ": a parameter, buffer or child name must be non-empty and contain no '.', got \"",
             excerpt(name), "\"");
  LOOM_CHECK(names_.count(name) == 0, type_name(), ": the name \"", excerpt(name),
             "\" is already registered");
}

Tensor Module::register_parameter(const std::string& name, const Tensor& value,
                                  bool requires_grad) {
  check_new_name(name);
  LOOM_CHECK(value.defined(), type_name(), ": parameter \"", name, "\" is undefined");
  Tensor param = value.is_leaf() ? value : value.detach();
  if (requires_grad) {
    LOOM_CHECK(is_floating(param.dtype()), type_name(), ": parameter \"", name,
               "\" must be floating-point to require grad, got ", dtype_name(param.dtype()));
  }
  param.set_requires_grad(requires_grad);
  names_.insert(name);
  parameters_.emplace_back(name, param);
  return param;
}

Tensor Module::register_buffer(const std::string& name, const Tensor& value) {
  check_new_name(name);
  LOOM_CHECK(value.defined(), type_name(), ": buffer \"", name, "\" is undefined");
  Tensor buffer = value.detach();
  names_.insert(name);
  buffers_.emplace_back(name, buffer);
  return buffer;
}

void Module::add_child(const std::string& name, ModulePtr module) {
  check_new_name(name);
  LOOM_CHECK(module != nullptr, type_name(), ": child module \"", name, "\" is null");
  LOOM_CHECK(module.get() != this, type_name(), ": a module cannot be its own child");
  names_.insert(name);
  children_.emplace_back(name, std::move(module));
}

void Module::collect(NamedTensors& out, const std::string& prefix, bool params,
                     bool recurse) const {
  for (const auto& [name, tensor] : params ? parameters_ : buffers_) {
    out.insert(prefix + name, tensor);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->collect(out, prefix + name + ".", params, true);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect(out, "", true, recurse);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect(out, "", false, recurse);
  return out;
}

std::vector<ModulePtr> Module::children() const {
  std::vector<ModulePtr> out;
  for (const auto& entry : children_) out.push_back(entry.second);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (const auto& entry : children_) entry.second->apply(fn);
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t count = 0;
  for (const auto& item : named_parameters()) {
    if (!trainable_only || item.second.requires_grad()) count += item.second.numel();
  }
  return count;
}

void Module::train(bool on) {
  apply([on](Module& m) { m.training_ = on; });
}

void Module::for_each_tensor(const std::function<void(Tensor&)>& fn) {
  apply([&](Module& m) {
    for (auto& entry : m.parameters_) fn(entry.second);
    for (auto& entry : m.buffers_) fn(entry.second);
  });
}

void retarget(const Tensor& target, const Tensor& moved) {
  if (moved.is_same(target)) return;
  TensorImpl& impl = *target.impl();
  impl.storage = moved.storage();
  impl.shape = moved.shape();
  impl.strides = moved.strides();
  impl.offset = moved.offset();
  impl.dtype = moved.dtype();
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for_each_tensor([&](Tensor& t) {
    retarget(t, t.to(device));
    if (t.grad().defined()) t.impl()->grad = t.grad().to(device);
  });
}

void Module::to(DType dtype) {
  LOOM_CHECK(is_floating(dtype), type_name(),
             ".to: modules convert to floating-point dtypes only, got ", dtype_name(dtype));
  NoGradGuard no_grad;
  for_each_tensor([&](Tensor& t) {
    if (!is_floating(t.dtype())) return;
    retarget(t, t.to(dtype));
    if (t.grad().defined()) t.impl()->grad = t.grad().to(dtype);
  });
}

void Module::to(MemoryFormat format) {
  NoGradGuard no_grad;
  for_each_tensor([&](Tensor& t) {
    if (t.dim() != 4) return;
    retarget(t, t.contiguous(format));
    if (t.grad().defined()) t.impl()->grad = t.grad().contiguous(format);
  });
}

Device Module::device() const {
  for (const auto* list : {&parameters_, &buffers_}) {
    if (!list->empty()) return list->front().second.device();
  }
  for (const auto& entry : children_) {
    if (!entry.second->parameters().empty() || !entry.second->named_buffers().empty()) {
      return entry.second->device();
    }
  }
  return kCPU;
}

void Module::zero_grad(bool set_to_none) {
  for (const auto& item : named_parameters()) {
    Tensor p = item.second;
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor(p.grad()).zero_();
    }
  }
}

void Module::init_parameters(Init scheme, Generator* gen) {
  apply([&](Module& m) { m.reset_own_parameters(scheme, gen); });
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  for (const auto& item : named_parameters()) out.insert(item.first, item.second.detach());
  for (const auto& item : named_buffers()) out.insert(item.first, item.second.detach());
  return out;
}

std::vector<StateEntry> Module::state_layout() const {
  std::vector<StateEntry> out;
  for (const auto& [name, tensor] : state_dict())
    out.push_back({name, tensor.shape(), tensor.dtype()});
  return out;
}

LoadResult Module::load_state_dict(const NamedTensors& state, bool strict) {
  const NamedTensors own = state_dict();
  LoadResult result;
  std::vector<std::string> mismatched;
  for (const auto& [name, tensor] : own) {
    if (!state.contains(name)) {
      result.missing_keys.push_back(name);
      continue;
    }
    const Tensor& given = state.at(name);
    LOOM_CHECK(given.defined(), "load_state_dict: \"", excerpt(name), "\" is an undefined tensor");
    if (given.shape() != tensor.shape()) {
      mismatched.push_back(excerpt(name) + " (expected " + shape_str(tensor.shape()) + ", got " +
                           excerpt(shape_str(given.shape())) + ")");
    }
  }
  for (const auto& item : state) {
    if (!own.contains(item.first)) result.unexpected_keys.push_back(item.first);
  }
  std::ostringstream problems;
  if (strict && !result.missing_keys.empty()) {
    problems << "\n  missing keys: " << join(result.missing_keys);
  }
  if (strict && !result.unexpected_keys.empty()) {
    problems << "\n  unexpected keys: " << join(result.unexpected_keys);
  }
  if (!mismatched.empty()) problems << "\n  shape mismatches: " << join(mismatched, /*cut=*/false);
  LOOM_CHECK(problems.str().empty(), "load_state_dict into ", type_name(),
             " failed:", problems.str());

  NoGradGuard no_grad;
  for (const auto& [name, tensor] : own) {
    if (state.contains(name)) Tensor(tensor).copy_(state.at(name));
  }
  return result;
}

EvalModeGuard::EvalModeGuard(Module& module) : module_(module) {
  module_.apply([&](Module& m) { modes_.push_back(m.is_training()); });
  module_.eval();
}

EvalModeGuard::~EvalModeGuard() {
  // train() recurses, and apply() visits parents first, so each child's own mode wins.
  size_t i = 0;
  module_.apply([&](Module& m) { m.train(modes_[i++]); });
}

}  // namespace loom::nn
