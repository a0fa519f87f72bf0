// The fused CUDA optimizer updates: CPU/CUDA parity of several steps of every optimizer on
// random parameters of awkward sizes, clip_grad_norm_ parity, a step over 50 tensors costing a
// few launches, and checkpoints moving between devices.
#include <functional>

#include "loom/optim/optim.h"
#include "testing.h"

namespace loom {
namespace {

using optim::EpsilonPlacement;
using optim::GroupOptions;

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

template <typename Opt>
Factory factory(GroupOptions options) {
  return [options](std::vector<Tensor> params) -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<Opt>(std::move(params), options);
  };
}

const std::vector<std::pair<std::string, Factory>>& variants() {
  static const std::vector<std::pair<std::string, Factory>> all = {
      {"SGD", factory<optim::SGD>(GroupOptions().with_lr(0.1))},
      {"SGD wd", factory<optim::SGD>(GroupOptions().with_lr(0.1).with_weight_decay(0.05))},
      {"SGD momentum dampening",
       factory<optim::SGD>(GroupOptions().with_lr(0.1).with_momentum(0.8).with_dampening(0.2))},
      {"SGD nesterov wd",
       factory<optim::SGD>(
           GroupOptions().with_lr(0.05).with_momentum(0.9).with_nesterov().with_weight_decay(
               0.01))},
      {"Adam", factory<optim::Adam>(GroupOptions().with_lr(1e-2))},
      {"Adam wd Keras",
       factory<optim::Adam>(
           GroupOptions().with_lr(1e-2).with_weight_decay(0.1).with_eps(1e-3).with_eps_placement(
               EpsilonPlacement::Keras))},
      {"AdamW", factory<optim::AdamW>(GroupOptions().with_lr(1e-2).with_weight_decay(0.1))}};
  return all;
}

const std::vector<Shape> kShapes = {{1}, {3}, {1000003}, {17, 33}, {2, 3, 5}, {70000}};

// Runs `steps` steps of `make` on params of kShapes (values from seed) on `device`, with
// gradients drawn on the CPU per step so both devices see the same ones.
std::vector<Tensor> run(const Factory& make, Device device, DType dtype, uint64_t seed, int steps) {
  Generator gen(seed);
  std::vector<Tensor> params;
  for (const Shape& shape : kShapes)
    params.push_back(randn(shape, dtype, &gen).to(device).requires_grad_());
  auto opt = make(params);
  for (int s = 0; s < steps; ++s) {
    for (Tensor& p : params) p.set_grad(randn(p.shape(), dtype, &gen).to(device));
    if (s == 1) params[1].set_grad(Tensor());  // one parameter skips a step
    opt->step();
  }
  return params;
}

TEST(FusedOptimizers, MatchTheCpuForEveryOptimizer) {
  LOOM_REQUIRE_CUDA();
  uint64_t seed = 9000;
  for (const auto& [name, make] : variants()) {
    for (DType dtype : {kFloat32, kFloat64}) {
      SCOPED_TRACE(name + " " + dtype_name(dtype));
      ++seed;
      const std::vector<Tensor> cpu = run(make, kCPU, dtype, seed, 4);
      const std::vector<Tensor> gpu = run(make, kCUDA, dtype, seed, 4);
      const double tol = dtype == kFloat32 ? 2e-5 : 1e-12;
      for (size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_TRUE(gpu[i].is_cuda());
        EXPECT_TENSOR_NEAR(gpu[i].cpu(), cpu[i], tol, tol);
      }
    }
  }
}

TEST(FusedOptimizers, StateLivesOnTheParameterDeviceAndMovesWithCheckpoints) {
  LOOM_REQUIRE_CUDA();
  const Factory make = factory<optim::Adam>(GroupOptions().with_lr(1e-2));
  Generator gen(77);
  Tensor host = randn({4, 9}, kFloat32, &gen);
  Tensor gpu_param = host.cuda().requires_grad_();
  auto gpu_opt = make({gpu_param});
  gpu_param.set_grad(randn({4, 9}, kFloat32, &gen).cuda());
  gpu_opt->step();
  const optim::OptimizerState state = gpu_opt->state_dict();
  EXPECT_TRUE(state.tensors.at("state.0.exp_avg").is_cuda());
  // Continue on the CPU from the GPU checkpoint and on the GPU itself: the same values.
  Tensor cpu_param = gpu_param.detach().cpu().requires_grad_();
  auto cpu_opt = make({cpu_param});
  cpu_opt->load_state_dict(state);
  const Tensor g = randn({4, 9}, kFloat32, &gen);
  gpu_param.set_grad(g.cuda());
  cpu_param.set_grad(g);
  gpu_opt->step();
  cpu_opt->step();
  EXPECT_TENSOR_NEAR(gpu_param.cpu(), cpu_param, 1e-6, 1e-5);
}

TEST(FusedOptimizers, UpdateNonContiguousCudaParameters) {
  LOOM_REQUIRE_CUDA();
  Tensor base = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).cuda();
  Tensor t = base.t();
  t.requires_grad_();
  optim::SGD opt({t}, GroupOptions().with_lr(1.0));
  t.set_grad(from_vector<float>({1, 10, 100, 1000, 10000, 100000}, {3, 2}).cuda());
  opt.step();
  EXPECT_EQ(base.cpu().to_vector<float>(), (std::vector<float>{0, -98, -9997, -6, -995, -99994}));
}

TEST(FusedOptimizers, AStepOverFiftyTensorsIsAFewLaunches) {
  LOOM_REQUIRE_CUDA();
  Generator gen(5);
  std::vector<Tensor> params;
  for (int i = 0; i < 50; ++i) {
    params.push_back(randn({1 + 37 * i}, kFloat32, &gen).cuda().requires_grad_());
    params.back().set_grad(randn({1 + 37 * i}, kFloat32, &gen).cuda());
  }
  for (const auto& [name, make] : variants()) {
    SCOPED_TRACE(name);
    auto opt = make(params);
    const int64_t before = optim::fused_kernel_launches();
    opt->step();
    const int64_t launches = optim::fused_kernel_launches() - before;
    EXPECT_GE(launches, 1);
    EXPECT_LE(launches, 3) << "a step over 50 tensors should be a few fused launches";
  }
  const int64_t before = optim::fused_kernel_launches();
  optim::clip_grad_norm_(params, 1e-3);  // clips: one pass for the norm, one for the scale
  EXPECT_LE(optim::fused_kernel_launches() - before, 2);
}

TEST(FusedOptimizers, ClipGradNormMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  for (DType dtype : {kFloat32, kFloat64}) {
    Generator gen(dtype == kFloat32 ? 41 : 42);
    std::vector<Tensor> cpu, gpu;
    for (const Shape& shape : kShapes) {
      Tensor p = randn(shape, dtype, &gen);
      Tensor g = randn(shape, dtype, &gen);
      cpu.push_back(p.clone().requires_grad_());
      cpu.back().set_grad(g.clone());
      gpu.push_back(p.cuda().requires_grad_());
      gpu.back().set_grad(g.cuda());
    }
    const double cpu_norm = optim::clip_grad_norm_(cpu, 5.0);
    const double gpu_norm = optim::clip_grad_norm_(gpu, 5.0);
    EXPECT_NEAR(gpu_norm, cpu_norm, 1e-9 * cpu_norm);
    EXPECT_GT(cpu_norm, 5.0);
    for (size_t i = 0; i < cpu.size(); ++i)
      EXPECT_TENSOR_NEAR(gpu[i].grad().cpu(), cpu[i].grad(), 1e-7, 1e-5);
  }
}

}  // namespace
}  // namespace loom
