// SGD: option checks and the grouping of parameters into fused updates.
#include "loom/optim/sgd.h"

#include <cmath>

#include "loom/optim/fused_update.h"

namespace loom::optim {

SGD::SGD(std::vector<Tensor> params, const GroupOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), std::nullopt}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const GroupOptions& defaults)
    : Optimizer("SGD", defaults) {
  init_groups(std::move(groups));
}

void SGD::check_options(const GroupOptions& o) const {
  LOOM_CHECK(std::isfinite(o.lr) && o.lr >= 0.0, "SGD: invalid learning rate ", o.lr);
  LOOM_CHECK(std::isfinite(o.momentum) && o.momentum >= 0.0, "SGD: invalid momentum ", o.momentum);
  LOOM_CHECK(std::isfinite(o.dampening) && o.dampening >= 0.0 && o.dampening <= 1.0,
             "SGD: invalid dampening ", o.dampening, " (must lie in [0, 1])");
  LOOM_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, "SGD: invalid weight_decay ",
             o.weight_decay);
  LOOM_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
             "SGD: Nesterov momentum needs momentum > 0 and dampening 0 (got momentum ", o.momentum,
             ", dampening ", o.dampening, ")");
}

std::vector<std::string> SGD::buffer_names(const GroupOptions& o) const {
  if (o.momentum == 0.0) return {};
  return {"momentum_buffer"};
}

void SGD::update_group(const GroupOptions& o, std::vector<Slot>& slots) {
  for (auto& part : partition(slots)) {
    std::vector<Tensor> params, grads, buffers;
    for (Slot* slot : part) {
      params.push_back(slot->param);
      grads.push_back(slot->grad);
      if (o.momentum != 0.0) buffers.push_back(buffer(*slot, "momentum_buffer"));
    }
    const detail::SgdConfig config{o.lr,        o.weight_decay, o.momentum,
                                   o.dampening, o.nesterov,     part.front()->state->step == 1};
    detail::sgd_update(params, grads, buffers, config);
  }
}

}  // namespace loom::optim
