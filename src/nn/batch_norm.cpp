// BatchNorm2d: parameters, buffers and spec; the maths (and the running-statistics update) is
// loom::batch_norm.
#include "loom/nn/batch_norm.h"

#include <nlohmann/json.hpp>

#include "loom/nn/untrusted_json.h"
#include "loom/ops/batch_norm.h"
#include "loom/ops/elementwise.h"
#include "loom/tensor/autograd.h"

namespace loom::nn {

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, double momentum)
    : num_features_(num_features), eps_(eps), momentum_(momentum) {
  LOOM_CHECK(num_features > 0, "BatchNorm2d: num_features must be positive, got ", num_features);
  LOOM_CHECK(eps > 0 && momentum >= 0 && momentum <= 1, "BatchNorm2d: need eps > 0 and momentum ",
             "in [0, 1], got eps ", eps, ", momentum ", momentum);
  weight = register_parameter("weight", empty({num_features}));
  bias = register_parameter("bias", empty({num_features}));
  running_mean = register_buffer("running_mean", empty({num_features}));
  running_var = register_buffer("running_var", empty({num_features}));
  num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  reset_own_parameters(Init::PyTorch, nullptr);
}

Tensor BatchNorm2d::forward(const Tensor& x) { return forward_impl(x, /*relu=*/false); }

Tensor BatchNorm2d::forward_relu(const Tensor& x) { return forward_impl(x, /*relu=*/true); }

Tensor BatchNorm2d::forward_impl(const Tensor& x, bool relu) {
  LOOM_CHECK(x.dim() == 4 && x.size(1) == num_features_, "BatchNorm2d(", num_features_,
             "): expected input [N, ", num_features_, ", H, W], got ", shape_str(x.shape()));
  if (is_training()) {
    // On the device, without a host sync (a captured step replays it): one int64 add.
    NoGradGuard no_grad;
    if (!one_.defined() || one_.device() != num_batches_tracked.device()) {
      one_ = ones({}, TensorOptions(kInt64).device(num_batches_tracked.device()));
    }
    num_batches_tracked.add_(one_);
  }
  const auto op = relu ? batch_norm_relu : batch_norm;
  return op(x, weight, bias, running_mean, running_var, is_training(), momentum_, eps_);
}

void BatchNorm2d::reset_own_parameters(Init, Generator*) {
  NoGradGuard no_grad;
  weight.fill_(1.0);
  bias.zero_();
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

std::string BatchNorm2d::config_json() const {
  return nlohmann::json{{"num_features", num_features_}, {"eps", eps_}, {"momentum", momentum_}}
      .dump();
}

std::shared_ptr<BatchNorm2d> BatchNorm2d::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "BatchNorm2d spec");
  const JsonObject c(j, "BatchNorm2d spec");
  return std::make_shared<BatchNorm2d>(c.integer("num_features", 1, kMaxSpecInteger),
                                       c.number("eps", 1e-5), c.number("momentum", 0.1));
}

namespace {

int64_t num_features_of(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "BatchNorm2d spec");
  return JsonObject(j, "BatchNorm2d spec").integer("num_features", 1, kMaxSpecInteger);
}

}  // namespace

std::vector<StateEntry> BatchNorm2d::state_of_config(const std::string& config_json) {
  const int64_t n = num_features_of(config_json);
  return {{"weight", {n}, kFloat32},
          {"bias", {n}, kFloat32},
          {"running_mean", {n}, kFloat32},
          {"running_var", {n}, kFloat32},
          {"num_batches_tracked", {}, kInt64}};
}

// [num_features, H, W] as it is.
ShapeRule BatchNorm2d::shape_rule_of_config(const std::string& config_json) {
  const int64_t n = num_features_of(config_json);
  const std::string name = "BatchNorm2d(" + std::to_string(n) + ")";
  return
      [n, name](const Shape& x) { return is_image_of(x, n) ? fits(x) : not_an_image(x, n, name); };
}

}  // namespace loom::nn
