// Dropout: probability and spec; the maths is loom::dropout.
#include "loom/nn/dropout.h"

#include <nlohmann/json.hpp>

#include "loom/nn/untrusted_json.h"
#include "loom/ops/dropout.h"

namespace loom::nn {

Dropout::Dropout(double p) : p_(p) {
  LOOM_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training()); }

std::string Dropout::config_json() const { return nlohmann::json{{"p", p_}}.dump(); }

std::shared_ptr<Dropout> Dropout::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Dropout spec");
  return std::make_shared<Dropout>(JsonObject(j, "Dropout spec").number("p", 0.5));
}

}  // namespace loom::nn
