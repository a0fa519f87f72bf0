// train::CapturedStep on the CPU: every step is an ordinary eager step.
#include <loom/loom.h>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

TEST(CapturedStep, OnTheCpuEveryStepIsEager) {
  auto eager_model = testing::tiny_model(4, 8, false),
       stepped_model = testing::tiny_model(4, 8, false);
  optim::Adam eager_opt(eager_model->parameters()), stepped_opt(stepped_model->parameters());
  const train::LossFn loss = train::binary_cross_entropy_loss();
  train::CapturedStep step(*stepped_model, loss, stepped_opt);
  Generator gen(5);
  for (int i = 0; i < 4; ++i) {
    const Tensor images = uniform({6, 3, 8, 8}, -1.0, 1.0, kFloat32, &gen);
    const Tensor labels = randint(0, 2, {6}, kInt64, &gen);
    const Tensor l = loss(eager_model->forward(images), labels);
    eager_opt.zero_grad();
    l.backward();
    eager_opt.step();
    const train::CapturedStep::Result r = step.run(images, labels);
    EXPECT_FALSE(r.replayed);
    EXPECT_EQ(r.loss.item<float>(), l.item<float>());
  }
  EXPECT_EQ(step.replays(), 0);
  EXPECT_EQ(step.eager_steps(), 4);
  EXPECT_EQ(step.graphs(), 0u);
  const auto a = eager_model->parameters(), b = stepped_model->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TENSOR_NEAR(b[i].detach(), a[i].detach(), 0.0, 0.0);
  EXPECT_LOOM_ERROR(train::CapturedStep(*stepped_model, loss, stepped_opt, {0, 4}), "warmup_steps");
}

}  // namespace
}  // namespace loom
