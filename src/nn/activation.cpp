// Parameterless layers: forwarding to the ops, and the specs of those with settings.
#include "nn/activation.h"

#include <nlohmann/json.hpp>

#include "nn/untrusted_json.h"
#include "ops/activation.h"

namespace loom::nn {

namespace {
// The dimensions a spec may name (negative: from the end), far more than any input has.
constexpr int64_t kMaxDims = 64;
}  // namespace

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return loom::tanh(x); }

Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope_); }

std::string LeakyReLU::config_json() const {
  return nlohmann::json{{"negative_slope", negative_slope_}}.dump();
}

std::shared_ptr<LeakyReLU> LeakyReLU::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "LeakyReLU spec");
  return std::make_shared<LeakyReLU>(JsonObject(j, "LeakyReLU spec").number("negative_slope", 0.01));
}

Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim_); }

std::string Softmax::config_json() const { return nlohmann::json{{"dim", dim_}}.dump(); }

std::shared_ptr<Softmax> Softmax::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Softmax spec");
  return std::make_shared<Softmax>(JsonObject(j, "Softmax spec").integer("dim", -kMaxDims, kMaxDims, -1));
}

Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim_, end_dim_); }

std::string Flatten::config_json() const {
  return nlohmann::json{{"start_dim", start_dim_}, {"end_dim", end_dim_}}.dump();
}

std::shared_ptr<Flatten> Flatten::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Flatten spec");
  const JsonObject c(j, "Flatten spec");
  return std::make_shared<Flatten>(c.integer("start_dim", -kMaxDims, kMaxDims, 1),
                                   c.integer("end_dim", -kMaxDims, kMaxDims, -1));
}

}  // namespace loom::nn
