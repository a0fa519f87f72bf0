// from_spec(), spec_state() and SpecShapes: the name -> (factory, state, shape rule) map, filled
// by one function (builtin_types) with every module type of loom, plus the types users register.
// Each walks the spec parsed once: a Sequential's layers are built from the parsed JSON, never
// re-serialised (which made a 5,000-deep spec cost 36 s and 7 GB), so a spec costs time linear
// in its size.
#include "loom/nn/spec.h"

#include <map>
#include <mutex>
#include <unordered_set>

#include "loom/nn/activation.h"
#include "loom/nn/batch_norm.h"
#include "loom/nn/conv.h"
#include "loom/nn/dropout.h"
#include "loom/nn/linear.h"
#include "loom/nn/models/resnet.h"
#include "loom/nn/pooling.h"
#include "loom/nn/sequential.h"
#include "loom/nn/untrusted_json.h"

namespace loom::nn {

namespace {

using nlohmann::json;

struct ModuleType {
  ModuleFactory factory;
  StateFunction state;     // empty: the type's state cannot be predicted
  ShapeRuleFactory shape;  // empty: the inputs the type takes cannot be predicted
};

std::vector<StateEntry> no_state(const std::string&) { return {}; }

// Elementwise layers (activations, dropout) give back the shape they get.
ShapeRule same_shape(const std::string&) {
  return [](const Shape& x) { return fits(x); };
}

ShapeRule global_pool_shape(const std::string&) { return GlobalAvgPool2d::output_shape; }

template <typename M>
ModuleType without_config(ShapeRuleFactory shape) {
  return {[](const std::string&) -> ModulePtr { return std::make_shared<M>(); }, no_state,
          std::move(shape)};
}

template <typename M>
ModuleType with_config(ShapeRuleFactory shape) {
  return {[](const std::string& config) -> ModulePtr { return M::from_config(config); }, no_state,
          std::move(shape)};
}

template <typename M>
ModuleType with_state() {
  return {[](const std::string& config) -> ModulePtr { return M::from_config(config); },
          M::state_of_config, M::shape_rule_of_config};
}

std::map<std::string, ModuleType> builtin_types() {
  return {
      {"Sequential", {}},  // built by build() itself, from the parsed JSON
      {"Linear", with_state<Linear>()},
      {"Conv2d", with_state<Conv2d>()},
      {"MaxPool2d", with_config<MaxPool2d>(MaxPool2d::shape_rule_of_config)},
      {"AvgPool2d", with_config<AvgPool2d>(AvgPool2d::shape_rule_of_config)},
      {"GlobalAvgPool2d", without_config<GlobalAvgPool2d>(global_pool_shape)},
      {"BatchNorm2d", with_state<BatchNorm2d>()},
      {"Dropout", with_config<Dropout>(same_shape)},
      {"ReLU", without_config<ReLU>(same_shape)},
      {"LeakyReLU", with_config<LeakyReLU>(same_shape)},
      {"Sigmoid", without_config<Sigmoid>(same_shape)},
      {"Tanh", without_config<Tanh>(same_shape)},
      {"Softmax", with_config<Softmax>(Softmax::shape_rule_of_config)},
      {"Flatten", with_config<Flatten>(Flatten::shape_rule_of_config)},
      {"Identity", without_config<Identity>(same_shape)},
      {"BasicBlock", with_state<BasicBlock>()},
  };
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModuleType> types = builtin_types();
};

Registry& registry() {
  static Registry instance;
  return instance;
}

// Where in the spec a problem is: nothing at the top, else " (layer \"1.0\")".
std::string at_layer(const std::string& path) {
  return path.empty() ? std::string() : " (layer \"" + excerpt(path) + "\")";
}

std::string child_path(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

const std::string& spec_type(const json& spec, const std::string& path) {
  LOOM_CHECK(spec.is_object() && spec.contains("type") && spec.at("type").is_string(),
             "from_spec: expected {\"type\": ..., \"config\": {...}}", at_layer(path), ", got ",
             json_excerpt(spec));
  return spec.at("type").get_ref<const std::string&>();
}

const json& spec_config(const json& spec) {
  static const json empty = json::object();
  const auto it = spec.find("config");
  return it != spec.end() ? *it : empty;
}

ModuleType find_type(const std::string& type, const std::string& path) {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.types.find(type);
    if (it != r.types.end()) return it->second;
  }
  std::string known;
  for (const std::string& name : registered_module_types()) known += " " + name;
  LOOM_FAIL("from_spec: unknown module type \"", excerpt(type), "\"", at_layer(path),
            "; known types:", known);
}

// The layers of a Sequential's config with their names, which must follow Module's rules
// (non-empty, no '.', distinct) so that spec_state() predicts the names the build gives.
std::vector<std::pair<std::string, const json*>> sequential_layers(const json& config,
                                                                   const std::string& path) {
  LOOM_CHECK(config.is_object() && config.contains("layers") && config.at("layers").is_array(),
             "Sequential spec: \"layers\" must be an array", at_layer(path));
  std::vector<std::pair<std::string, const json*>> layers;
  std::unordered_set<std::string> names;
  for (const json& entry : config.at("layers")) {
    LOOM_CHECK(entry.is_object() && entry.contains("name") && entry.at("name").is_string(),
               "Sequential spec: each layer needs a \"name\" string", at_layer(path), ", got ",
               json_excerpt(entry));
    const std::string& name = entry.at("name").get_ref<const std::string&>();
    LOOM_CHECK(!name.empty() && name.find('.') == std::string::npos && names.insert(name).second,
               "Sequential spec: layer names must be non-empty, without '.' and distinct, got \"",
               excerpt(name), "\"", at_layer(path));
    layers.emplace_back(name, &entry);
  }
  return layers;
}

// Runs a type's factory or state function on its config, naming the type and layer on errors.
template <typename F>
auto on_config(const std::string& type, const json& config, const std::string& path, const F& f) {
  try {
    return f(config.dump());
  } catch (const json::exception& e) {
    LOOM_FAIL("from_spec: bad config for ", excerpt(type), at_layer(path), " (", describe(e), ")");
  } catch (const Error& e) {
    LOOM_FAIL("from_spec: bad config for ", excerpt(type), at_layer(path), ": ", e.what());
  }
}

// Recursion: one level per nested Sequential, which nests three JSON containers, so at most
// kMaxJsonDepth / 3 levels.
ModulePtr build(const json& spec, const std::string& path) {
  const std::string& type = spec_type(spec, path);
  const json& config = spec_config(spec);
  if (type == "Sequential") {
    auto model = std::make_shared<Sequential>();
    for (const auto& [name, entry] : sequential_layers(config, path)) {
      model->add(name, build(*entry, child_path(path, name)));
    }
    return model;
  }
  return on_config(type, config, path, find_type(type, path).factory);
}

// Calls leaf(type name, its ModuleType, config, path) for each layer of `spec` that is not a
// Sequential, in order. Recursion: as build().
template <typename F>
void for_each_leaf(const json& spec, const std::string& path, const F& leaf) {
  const std::string& type = spec_type(spec, path);
  const json& config = spec_config(spec);
  if (type == "Sequential") {
    for (const auto& [name, entry] : sequential_layers(config, path))
      for_each_leaf(*entry, child_path(path, name), leaf);
    return;
  }
  leaf(type, find_type(type, path), config, path);
}

// TooSmall for an empty dimension, TooLarge past kMaxExampleElements; `what` is the shape's
// maker in the reason ("the input", "the layer").
std::optional<InputFit> outside_limits(const Shape& x, const std::string& what) {
  int64_t n = 1;
  for (const int64_t d : x) {
    if (d < 1)
      return not_fit(InputFit::Verdict::TooSmall,
                     what + " has an empty dimension: " + shape_str(x));
    if (n > kMaxExampleElements / d) {
      return not_fit(InputFit::Verdict::TooLarge, what + " makes " + shape_str(x) + ", over " +
                                                      std::to_string(kMaxExampleElements) +
                                                      " elements an example");
    }
    n *= d;
  }
  return std::nullopt;
}

}  // namespace

SpecShapes::SpecShapes(const std::string& spec_json) {
  auto add = [this](const std::string& type, const ModuleType& found, const json& config,
                    const std::string& path) {
    if (!found.shape) {
      const std::string reason = "type " + excerpt(type) + " has no shape rule";
      layers_.emplace_back(
          path, [reason](const Shape&) { return not_fit(InputFit::Verdict::Unknown, reason); });
      return;
    }
    layers_.emplace_back(path, on_config(type, config, path, found.shape));
  };
  for_each_leaf(parse_untrusted_json(spec_json, "from_spec"), "", add);
}

InputFit SpecShapes::fit(const Shape& example) const {
  if (std::optional<InputFit> bad = outside_limits(example, "the input")) return *bad;
  Shape x = example;
  for (const auto& [path, rule] : layers_) {
    InputFit step;
    try {
      step = rule(x);
    } catch (const Error& e) {  // a setting the op refuses at any size (pooling's padding)
      step = not_fit(InputFit::Verdict::Refused, excerpt(e.what(), 2 * kMaxExcerpt));
    }
    if (step.verdict == InputFit::Verdict::Fits) {
      if (std::optional<InputFit> bad = outside_limits(step.output, "the layer"))
        step = std::move(*bad);
    }
    if (step.verdict != InputFit::Verdict::Fits) {
      step.layer = excerpt(path);
      return step;
    }
    x = std::move(step.output);
  }
  return fits(x);
}

// TooSmall at a side holds at every smaller side (each size along the way is no larger there),
// TooLarge at every larger one; Refused and Unknown do not depend on the side.
std::optional<SpecShapes::Sides> SpecShapes::square_sides(int64_t channels,
                                                          int64_t max_side) const {
  using V = InputFit::Verdict;
  auto verdict = [&](int64_t s) { return fit({channels, s, s}).verdict; };
  int64_t lo = 1,
          hi = max_side + 1;  // the smallest side that is not TooSmall, max_side + 1 if none
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (verdict(mid) == V::TooSmall) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo > max_side || verdict(lo) != V::Fits) return std::nullopt;
  const int64_t smallest = lo;
  hi = max_side;  // the largest side that is not TooLarge, at least `smallest`
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (verdict(mid) == V::TooLarge) {
      hi = mid - 1;
    } else {
      lo = mid;
    }
  }
  return Sides{smallest, lo};
}

void register_module_type(const std::string& type_name, ModuleFactory factory, StateFunction state,
                          ShapeRuleFactory shape) {
  LOOM_CHECK(!type_name.empty() && factory, "register_module_type: need a name and a factory");
  LOOM_CHECK(type_name != "Sequential",
             "register_module_type: Sequential is built in and cannot be replaced");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.types[type_name] = {std::move(factory), std::move(state), std::move(shape)};
}

std::vector<std::string> registered_module_types() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.types) names.push_back(entry.first);
  return names;
}

ModulePtr from_spec(const std::string& spec_json) {
  return build(parse_untrusted_json(spec_json, "from_spec"), "");
}

PredictedState spec_state(const std::string& spec_json) {
  PredictedState state;
  auto add = [&state](const std::string& type, const ModuleType& found, const json& config,
                      const std::string& path) {
    if (!found.state) {
      state.unpredicted.push_back(path);
      return;
    }
    for (StateEntry& e : on_config(type, config, path, found.state)) {
      state.entries.push_back({child_path(path, e.name), std::move(e.shape), e.dtype});
    }
  };
  for_each_leaf(parse_untrusted_json(spec_json, "from_spec"), "", add);
  return state;
}

}  // namespace loom::nn
