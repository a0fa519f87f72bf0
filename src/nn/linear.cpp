// Linear: parameters, initialisation and spec; the maths is loom::linear.
#include "nn/linear.h"

#include <nlohmann/json.hpp>

#include "ops/linalg.h"

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

std::shared_ptr<Linear> Linear::from_config(const std::string& config_json) {
  const auto c = nlohmann::json::parse(config_json);
  return std::make_shared<Linear>(c.at("in_features").get<int64_t>(),
                                  c.at("out_features").get<int64_t>(), c.value("bias", true));
}

}  // namespace loom::nn
