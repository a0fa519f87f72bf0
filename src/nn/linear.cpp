// Linear: parameters, initialisation and spec; the maths is loom::linear.
#include "loom/nn/linear.h"

#include <nlohmann/json.hpp>

#include "loom/nn/untrusted_json.h"
#include "loom/ops/linalg.h"

namespace loom::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Init init, Generator* gen)
    : in_features_(in_features), out_features_(out_features) {
  LOOM_CHECK(in_features > 0 && out_features > 0, "Linear: in_features and out_features must be ",
             "positive, got ", in_features, " and ", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}));
  if (bias) this->bias = register_parameter("bias", empty({out_features}));
  reset_own_parameters(init, gen);
}

Tensor Linear::forward(const Tensor& x) {
  LOOM_CHECK(x.dim() >= 1 && x.size(-1) == in_features_, "Linear(", in_features_, ", ",
             out_features_, "): input of shape ", shape_str(x.shape()), " must end in ",
             in_features_);
  return linear(x, weight, bias);
}

void Linear::reset_own_parameters(Init scheme, Generator* gen) {
  init_weight_and_bias(scheme, weight, bias, gen);
}

std::string Linear::config_json() const {
  return nlohmann::json{
      {"in_features", in_features_}, {"out_features", out_features_}, {"bias", bias.defined()}}
      .dump();
}

namespace {

struct LinearConfig {
  int64_t in_features, out_features;
  bool bias;
};

LinearConfig parse_linear_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Linear spec");
  const JsonObject c(j, "Linear spec");
  return {c.integer("in_features", 1, kMaxSpecInteger),
          c.integer("out_features", 1, kMaxSpecInteger), c.boolean("bias", true)};
}

}  // namespace

std::shared_ptr<Linear> Linear::from_config(const std::string& config_json) {
  const LinearConfig c = parse_linear_config(config_json);
  return std::make_shared<Linear>(c.in_features, c.out_features, c.bias);
}

std::vector<StateEntry> Linear::state_of_config(const std::string& config_json) {
  const LinearConfig c = parse_linear_config(config_json);
  std::vector<StateEntry> state = {{"weight", {c.out_features, c.in_features}, kFloat32}};
  if (c.bias) state.push_back({"bias", {c.out_features}, kFloat32});
  return state;
}

// [..., in_features] -> [..., out_features]. An example of no dimensions is a batch [N] whose
// last dimension is the batch itself: the size it takes depends on the batch size.
ShapeRule Linear::shape_rule_of_config(const std::string& config_json) {
  const LinearConfig c = parse_linear_config(config_json);
  const std::string name =
      "Linear(" + std::to_string(c.in_features) + " -> " + std::to_string(c.out_features) + ")";
  return [c, name](const Shape& x) {
    if (x.empty())
      return not_fit(InputFit::Verdict::Unknown,
                     name + " would take the batch dimension as its features");
    if (x.back() != c.in_features) {
      return size_mismatch(x.back(), c.in_features,
                           name + " takes inputs ending in " + std::to_string(c.in_features) +
                               ", gets " + shape_str(x));
    }
    Shape out = x;
    out.back() = c.out_features;
    return fits(out);
  };
}

}  // namespace loom::nn
