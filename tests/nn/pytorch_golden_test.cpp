// cross_entropy (with label smoothing) and binary_cross_entropy_with_logits (with saturated
// logits) against PyTorch's loss and gradient on the fixed float64 inputs of
// tests/golden/pytorch_goldens.json.
#include "loom/nn/loss.h"
#include "pytorch_goldens.h"
#include "testing.h"

namespace loom {
namespace {

using nlohmann::json;

nn::Reduction reduction_of(const json& c) {
  const std::string r = c.at("reduction");
  if (r == "mean") return nn::Reduction::Mean;
  if (r == "sum") return nn::Reduction::Sum;
  throw Error("the goldens name a reduction this test does not know: " + r);
}

// The loss through f, then its gradient to the logits.
template <typename Loss>
void check_loss(const char* op, const Loss& f) {
  int seen = 0;
  for (const json& c : testing::pytorch_goldens().at("ops")) {
    if (c.at("op") != op) continue;
    ++seen;
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    Tensor logits = testing::golden_leaf(c.at("logits"));
    const Tensor loss = f(logits, c);
    testing::expect_golden(name + " loss", loss.item<double>(), c.at("loss").get<double>());
    loss.backward();
    testing::expect_golden(name + " grad_logits", logits.grad(), c.at("grad_logits"));
  }
  EXPECT_EQ(seen, 2) << op;
}

TEST(PyTorchGoldens, CrossEntropyWithAndWithoutLabelSmoothing) {
  check_loss("cross_entropy", [](const Tensor& logits, const json& c) {
    const Tensor targets = from_vector(c.at("targets").get<std::vector<int64_t>>());
    return nn::cross_entropy(logits, targets, reduction_of(c),
                             c.at("label_smoothing").get<double>());
  });
}

TEST(PyTorchGoldens, BinaryCrossEntropyWithLogitsSaturatedAndSoftTargets) {
  check_loss("binary_cross_entropy_with_logits", [](const Tensor& logits, const json& c) {
    return nn::binary_cross_entropy_with_logits(logits, testing::golden_tensor(c.at("targets")),
                                                reduction_of(c));
  });
}

}  // namespace
}  // namespace loom
