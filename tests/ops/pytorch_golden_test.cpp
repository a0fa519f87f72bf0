// conv2d, max_pool2d, batch_norm (training), softmax, log_softmax and linear against PyTorch's
// forward and backward on the fixed float64 inputs of tests/golden/pytorch_goldens.json: each
// result, and each input's gradient for the upstream gradient stored with the case.
#include <functional>
#include <map>

#include "pytorch_goldens.h"
#include "testing.h"

namespace loom {
namespace {

using nlohmann::json;

// Runs f on the case's leaves, back-propagates the case's grad_output, and compares the
// result with "y" and each leaf's gradient with "grad_<leaf>".
void check_case(const json& c, const std::vector<std::string>& leaves,
                const std::function<Tensor(std::map<std::string, Tensor>&)>& f) {
  const std::string name = c.at("name");
  SCOPED_TRACE(name);
  std::map<std::string, Tensor> in;
  for (const std::string& leaf : leaves) in[leaf] = testing::golden_leaf(c.at(leaf));
  const Tensor y = f(in);
  testing::expect_golden(name + " y", y, c.at("y"));
  y.backward(testing::golden_tensor(c.at("grad_output")));
  for (const std::string& leaf : leaves)
    testing::expect_golden(name + " grad_" + leaf, in[leaf].grad(), c.at("grad_" + leaf));
}

Size2 pair(const json& j) { return Size2(j.at(0).get<int64_t>(), j.at(1).get<int64_t>()); }

std::vector<const json*> cases_of(const std::string& op) {
  std::vector<const json*> out;
  for (const json& c : testing::pytorch_goldens().at("ops")) {
    if (c.at("op") == op) out.push_back(&c);
  }
  return out;
}

TEST(PyTorchGoldens, Conv2dWithStrideAndPadding) {
  const auto cases = cases_of("conv2d");
  ASSERT_EQ(cases.size(), 2u);
  for (const json* c : cases) {
    const json& s = c->at("stride");
    const json& p = c->at("padding");
    const Conv2dOptions options = Conv2dOptions()
                                      .stride(s[0].get<int64_t>(), s[1].get<int64_t>())
                                      .padding(p[0].get<int64_t>(), p[1].get<int64_t>());
    check_case(*c, {"x", "weight", "bias"},
               [&](auto& in) { return conv2d(in["x"], in["weight"], in["bias"], options); });
  }
}

TEST(PyTorchGoldens, MaxPool2d) {
  const auto cases = cases_of("max_pool2d");
  ASSERT_EQ(cases.size(), 2u);
  for (const json* c : cases) {
    check_case(*c, {"x"}, [&](auto& in) {
      return max_pool2d(in["x"], pair(c->at("kernel")), pair(c->at("stride")),
                        pair(c->at("padding")));
    });
  }
}

TEST(PyTorchGoldens, BatchNormTrainingAndItsRunningStatistics) {
  const auto cases = cases_of("batch_norm");
  ASSERT_EQ(cases.size(), 1u);
  const json& c = *cases[0];
  const Tensor running_mean = testing::golden_tensor(c.at("running_mean"));
  const Tensor running_var = testing::golden_tensor(c.at("running_var"));
  check_case(c, {"x", "weight", "bias"}, [&](auto& in) {
    return batch_norm(in["x"], in["weight"], in["bias"], running_mean, running_var,
                      /*training=*/true, c.at("momentum").get<double>(), c.at("eps").get<double>());
  });
  testing::expect_golden("batch_norm running_mean", running_mean, c.at("running_mean_after"));
  testing::expect_golden("batch_norm running_var", running_var, c.at("running_var_after"));
}

TEST(PyTorchGoldens, SoftmaxAndLogSoftmaxAlongEitherDim) {
  const auto soft = cases_of("softmax"), log_soft = cases_of("log_softmax");
  ASSERT_EQ(soft.size(), 2u);
  ASSERT_EQ(log_soft.size(), 2u);
  for (const json* c : soft) {
    check_case(*c, {"x"}, [&](auto& in) { return softmax(in["x"], c->at("dim").get<int64_t>()); });
  }
  for (const json* c : log_soft) {
    check_case(*c, {"x"},
               [&](auto& in) { return log_softmax(in["x"], c->at("dim").get<int64_t>()); });
  }
}

TEST(PyTorchGoldens, Linear) {
  const auto cases = cases_of("linear");
  ASSERT_EQ(cases.size(), 1u);
  check_case(*cases[0], {"x", "weight", "bias"},
             [](auto& in) { return linear(in["x"], in["weight"], in["bias"]); });
}

}  // namespace
}  // namespace loom
