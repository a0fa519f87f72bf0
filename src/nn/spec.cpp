// from_spec(): the name -> factory map, filled by one function (builtin_factories) with every
// module type of loom, plus the types users register.
#include "nn/spec.h"

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/models/resnet.h"
#include "nn/pooling.h"
#include "nn/sequential.h"

namespace loom::nn {

namespace {

template <typename M>
ModuleFactory without_config() {
  return [](const std::string&) -> ModulePtr { return std::make_shared<M>(); };
}

template <typename M>
ModuleFactory with_config() {
  return [](const std::string& config) -> ModulePtr { return M::from_config(config); };
}

std::map<std::string, ModuleFactory> builtin_factories() {
  return {
      {"Sequential", with_config<Sequential>()},
      {"Linear", with_config<Linear>()},
      {"Conv2d", with_config<Conv2d>()},
      {"MaxPool2d", with_config<MaxPool2d>()},
      {"AvgPool2d", with_config<AvgPool2d>()},
      {"GlobalAvgPool2d", without_config<GlobalAvgPool2d>()},
      {"BatchNorm2d", with_config<BatchNorm2d>()},
      {"Dropout", with_config<Dropout>()},
      {"ReLU", without_config<ReLU>()},
      {"LeakyReLU", with_config<LeakyReLU>()},
      {"Sigmoid", without_config<Sigmoid>()},
      {"Tanh", without_config<Tanh>()},
      {"Softmax", with_config<Softmax>()},
      {"Flatten", with_config<Flatten>()},
      {"Identity", without_config<Identity>()},
      {"BasicBlock", with_config<BasicBlock>()},
  };
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModuleFactory> factories = builtin_factories();
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void register_module_type(const std::string& type_name, ModuleFactory factory) {
  LOOM_CHECK(!type_name.empty() && factory, "register_module_type: need a name and a factory");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[type_name] = std::move(factory);
}

std::vector<std::string> registered_module_types() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

ModulePtr from_spec(const std::string& spec_json) {
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(spec_json);
  } catch (const nlohmann::json::exception& e) {
    LOOM_FAIL("from_spec: malformed JSON (", e.what(), ")");
  }
  LOOM_CHECK(spec.is_object() && spec.contains("type") && spec["type"].is_string(),
             "from_spec: expected {\"type\": ..., \"config\": {...}}, got ", spec.dump());
  const std::string type = spec["type"].get<std::string>();
  ModuleFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.factories.find(type);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const std::string& name : registered_module_types()) known += " " + name;
    LOOM_FAIL("from_spec: unknown module type \"", type, "\"; known types:", known);
  }
  const nlohmann::json config = spec.value("config", nlohmann::json::object());
  try {
    return factory(config.dump());
  } catch (const nlohmann::json::exception& e) {
    LOOM_FAIL("from_spec: bad config for ", type, " ", config.dump(), " (", e.what(), ")");
  }
}

}  // namespace loom::nn
