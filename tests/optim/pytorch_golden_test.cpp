// SGD, Adam and AdamW against torch.optim: five steps of each case in
// tests/golden/pytorch_goldens.json (a fixed parameter and fixed gradients), every step's
// parameter compared with PyTorch's, in float64.
#include <memory>

#include "loom/optim/optim.h"
#include "pytorch_goldens.h"
#include "testing.h"

namespace loom {
namespace {

using nlohmann::json;

// The case's torch.optim keyword arguments as loom's options; PyTorch's defaults where absent.
optim::GroupOptions options_of(const json& o) {
  optim::GroupOptions g;
  g.with_lr(o.at("lr").get<double>());
  g.with_weight_decay(o.value("weight_decay", 0.0));
  g.with_momentum(o.value("momentum", 0.0));
  g.with_dampening(o.value("dampening", 0.0));
  g.with_nesterov(o.value("nesterov", false));
  const std::vector<double> betas = o.value("betas", std::vector<double>{0.9, 0.999});
  g.with_betas(betas.at(0), betas.at(1));
  g.with_eps(o.value("eps", 1e-8));
  return g;
}

std::unique_ptr<optim::Optimizer> make(const std::string& kind, Tensor p,
                                       const optim::GroupOptions& o) {
  if (kind == "SGD") return std::make_unique<optim::SGD>(std::vector<Tensor>{p}, o);
  if (kind == "Adam") return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
  if (kind == "AdamW") return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, o);
  throw Error("the goldens name an optimizer this test does not know: " + kind);
}

TEST(PyTorchGoldens, OptimizerTrajectoriesMatchTorchOptim) {
  const json& cases = testing::pytorch_goldens().at("optimizers");
  ASSERT_GE(cases.size(), 7u);
  for (const json& c : cases) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    Tensor p = testing::golden_leaf(c.at("start"));
    auto opt = make(c.at("optimizer"), p, options_of(c.at("options")));
    const json& grads = c.at("grads");
    const json& trajectory = c.at("trajectory");
    ASSERT_EQ(grads.size(), trajectory.size());
    for (size_t s = 0; s < grads.size(); ++s) {
      p.set_grad(testing::golden_tensor(grads[s]));
      opt->step();
      testing::expect_golden(name + " step " + std::to_string(s + 1), p, trajectory[s]);
    }
  }
}

}  // namespace
}  // namespace loom
