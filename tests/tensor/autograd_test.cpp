// The autograd engine, exercised through the core's own differentiable views and copies.
#include "loom/tensor/primitives.h"
#include "testing.h"

namespace loom {
namespace {

using testing::gradcheck;
using testing::random_leaf;

TEST(Autograd, ViewsHaveExactGradients) {
  Tensor x = random_leaf({3, 4}, 1);
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].t(); }, {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].narrow(1, 1, 2); }, {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].reshape({2, 6}); }, {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].t().reshape({12}); }, {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].select(0, -1); }, {x});
  EXPECT_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return in[0].unsqueeze(1).permute({2, 1, 0});
      },
      {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].clone(); }, {x});
}

TEST(Autograd, DtypeConversionSendsTheGradientBackInTheInputsDtype) {
  Tensor x = random_leaf({3}, 8);
  Tensor y = x.to(kFloat32);
  EXPECT_EQ(y.grad_fn()->name(), "to");
  y.backward(from_vector<float>({1, 2, 3}));
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Autograd, GradientsAccumulateAcrossUsesAndCalls) {
  Tensor x = random_leaf({4}, 2);
  // x is used twice: its gradient is the sum of both paths.
  Tensor y = x.narrow(0, 0, 2);
  Tensor z = x.narrow(0, 1, 2);
  Tensor seed = from_vector<double>({1, 2});
  y.backward(seed);
  z.backward(seed);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 3, 2, 0}));
  // A second backward adds to .grad; the earlier gradient tensor is not aliased by the seed.
  x.narrow(0, 3, 1).backward(from_vector<double>({5}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 3, 2, 5}));
  EXPECT_EQ(seed.to_vector<double>(), (std::vector<double>{1, 2}));
}

TEST(Autograd, SeedIsNeverAliasedByLeafGrad) {
  Tensor x = random_leaf({2}, 3);
  Tensor seed = from_vector<double>({1, 1});
  x.clone().backward(seed);
  x.clone().backward(seed);
  EXPECT_EQ(seed.to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(Autograd, ErrorsNameTheProblem) {
  Tensor plain = ones({2});
  EXPECT_LOOM_ERROR(plain.backward(), "does not require grad");
  Tensor x = random_leaf({3}, 4);
  EXPECT_LOOM_ERROR(x.clone().backward(), "only for a tensor with one element");
  EXPECT_LOOM_ERROR(x.clone().backward(ones({2}, kFloat64)), "does not match the tensor");
  Tensor y = x.clone();
  y.backward(ones({3}, kFloat64));
  EXPECT_LOOM_ERROR(y.backward(ones({3}, kFloat64)), "retain_graph=true");
  Tensor r = x.clone();
  r.backward(ones({3}, kFloat64), /*retain_graph=*/true);
  EXPECT_NO_THROW(r.backward(ones({3}, kFloat64)));
  EXPECT_LOOM_ERROR(r.set_requires_grad(false), "only a leaf");
}

TEST(Autograd, NoGradAndDetachRecordNothing) {
  Tensor x = random_leaf({3}, 5);
  {
    NoGradGuard guard;
    Tensor y = x.clone();
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(grad_mode_enabled() == false);
  }
  EXPECT_TRUE(grad_mode_enabled());
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.storage().is_same(x.storage()));
  EXPECT_TRUE(x.clone().grad_fn() != nullptr);
  EXPECT_EQ(x.clone().grad_fn()->name(), "clone");
}

TEST(Autograd, PostAccumulateHooksSeeTheFinalGradient) {
  Tensor x = random_leaf({2}, 6);
  std::vector<double> seen;
  int calls = 0;
  x.register_post_accumulate_hook([&](Tensor& leaf) {
    ++calls;
    seen = leaf.grad().to_vector<double>();
  });
  x.clone().backward(from_vector<double>({1, 2}));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (std::vector<double>{1, 2}));
  EXPECT_LOOM_ERROR(ones({2}).register_post_accumulate_hook([](Tensor&) {}), "only leaves");
}

TEST(Autograd, RemovedHooksNoLongerRun) {
  Tensor x = random_leaf({2}, 7);
  int first = 0, second = 0;
  const uint64_t a = x.register_post_accumulate_hook([&](Tensor&) { ++first; });
  x.register_post_accumulate_hook([&](Tensor&) { ++second; });
  x.clone().backward(from_vector<double>({1, 1}));
  x.remove_post_accumulate_hook(a);
  x.remove_post_accumulate_hook(a);  // a second time: nothing happens
  x.clone().backward(from_vector<double>({1, 1}));
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 2);
}

TEST(Autograd, QueuedCallbacksRunOnceBackwardHasReachedEveryLeaf) {
  Tensor x = random_leaf({2}, 8), y = random_leaf({2}, 9);
  std::vector<std::string> order;
  x.register_post_accumulate_hook([&](Tensor&) {
    order.push_back("x");
    queue_backward_callback([&] {
      order.push_back(y.grad().defined() ? "end, y done" : "end, y missing");
      queue_backward_callback([&] { order.push_back("queued by a callback"); });
    });
  });
  y.register_post_accumulate_hook([&](Tensor&) { order.push_back("y"); });
  (x * y).backward(from_vector<double>({1, 1}));
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[2], "end, y done");
  EXPECT_EQ(order[3], "queued by a callback");
  EXPECT_LOOM_ERROR(queue_backward_callback([] {}), "no backward() is running");
}

TEST(Autograd, GradcheckCatchesAWrongGradient) {
  // A deliberately wrong backward must be reported: the checker itself can fail.
  Tensor x = random_leaf({3}, 7);
  const auto wrong = [](const std::vector<Tensor>& in) {
    Tensor out = in[0].detach().clone();
    return record("wrong", out, {in[0]}, [](const Tensor& g) {
      Tensor twice = g.clone();
      twice.copy_(g);
      detail::accumulate(twice, g);  // 2 * g instead of g
      return std::vector<Tensor>{twice};
    });
  };
  EXPECT_FALSE(gradcheck(wrong, {x}).empty());
}

}  // namespace
}  // namespace loom
