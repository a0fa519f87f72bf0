// Adam and AdamW: option checks, the per-step coefficients folded on the host, and the
// grouping of parameters into fused updates.
#include "loom/optim/adam.h"

#include <cmath>

#include "loom/optim/fused_update.h"

namespace loom::optim {

namespace {
std::vector<ParamGroup> one_group(std::vector<Tensor> params) {
  return {ParamGroup{std::move(params), std::nullopt}};
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, const GroupOptions& options)
    : Adam("Adam", one_group(std::move(params)), options, false) {}
Adam::Adam(std::vector<ParamGroup> groups, const GroupOptions& defaults)
    : Adam("Adam", std::move(groups), defaults, false) {}
AdamW::AdamW(std::vector<Tensor> params, const GroupOptions& options)
    : Adam("AdamW", one_group(std::move(params)), options, true) {}
AdamW::AdamW(std::vector<ParamGroup> groups, const GroupOptions& defaults)
    : Adam("AdamW", std::move(groups), defaults, true) {}

Adam::Adam(const char* name, std::vector<ParamGroup> groups, const GroupOptions& defaults,
           bool decoupled)
    : Optimizer(name, defaults), decoupled_(decoupled) {
  init_groups(std::move(groups));
}

void Adam::check_options(const GroupOptions& o) const {
  LOOM_CHECK(std::isfinite(o.lr) && o.lr >= 0.0, name(), ": invalid learning rate ", o.lr);
  LOOM_CHECK(std::isfinite(o.eps) && o.eps >= 0.0, name(), ": invalid eps ", o.eps);
  LOOM_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0, name(), ": invalid beta1 ", o.beta1,
             " (must lie in [0, 1))");
  LOOM_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0, name(), ": invalid beta2 ", o.beta2,
             " (must lie in [0, 1))");
  LOOM_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, name(),
             ": invalid weight_decay ", o.weight_decay);
}

std::vector<std::string> Adam::buffer_names(const GroupOptions&) const {
  return {"exp_avg", "exp_avg_sq"};
}

void Adam::update_group(const GroupOptions& o, std::vector<Slot>& slots) {
  for (auto& part : partition(slots)) {
    std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs;
    for (Slot* slot : part) {
      params.push_back(slot->param);
      grads.push_back(slot->grad);
      exp_avgs.push_back(buffer(*slot, "exp_avg"));
      exp_avg_sqs.push_back(buffer(*slot, "exp_avg_sq"));
    }
    const double t = static_cast<double>(part.front()->state->step);
    const double bc1 = 1.0 - std::pow(o.beta1, t);
    const double sqrt_bc2 = std::sqrt(1.0 - std::pow(o.beta2, t));
    detail::AdamConfig config{};
    config.beta1 = o.beta1;
    config.beta2 = o.beta2;
    config.weight_decay = o.weight_decay;
    config.decay_factor = 1.0 - o.lr * o.weight_decay;
    config.step_size = o.lr / bc1;
    config.inv_sqrt_bc2 = 1.0 / sqrt_bc2;
    config.eps_term = o.eps_placement == EpsilonPlacement::Keras ? o.eps / sqrt_bc2 : o.eps;
    config.decoupled = decoupled_;
    detail::adam_update(params, grads, exp_avgs, exp_avg_sqs, config);
  }
}

}  // namespace loom::optim
