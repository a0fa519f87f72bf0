// nn on a GPU: in-place moves with to(), CPU/CUDA parity of zoo models' forward and backward
// and of the losses, summary() of a GPU model, and the memorisation smoke test on the GPU.
#include "testing.h"
#include "zoo_helpers.h"

namespace loom::nn {
namespace {

// A GPU copy of `model` built from its spec and state_dict.
ModulePtr cuda_twin(const Module& model) {
  ModulePtr twin = from_spec(model.spec_json());
  twin->load_state_dict(model.state_dict());
  twin->to(kCUDA);
  return twin;
}

// Runs BCE-with-logits forward and backward on both models and compares the outputs and every
// parameter's gradient (float32, relative tolerance around 1e-4: TF32 is turned off in conv).
void expect_parity(Module& cpu, Module& gpu, const Tensor& x, const Tensor& labels) {
  const ConvTf32Scope full_float32(false);
  const Tensor out_cpu = cpu.forward(x);
  const Tensor out_gpu = gpu.forward(x.to(kCUDA));
  EXPECT_TRUE(out_gpu.is_cuda());
  EXPECT_TENSOR_NEAR(out_gpu.cpu(), out_cpu, 1e-4, 1e-3);
  binary_cross_entropy_with_logits(out_cpu, labels).backward();
  binary_cross_entropy_with_logits(out_gpu, labels.to(kCUDA)).backward();
  const NamedTensors cpu_params = cpu.named_parameters();
  for (const auto& [name, p] : gpu.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TRUE(p.grad().is_cuda()) << name;
    const std::string cmp =
        testing::compare(p.grad().cpu(), cpu_params.at(name).grad(), 1e-4, 2e-3);
    EXPECT_TRUE(cmp.empty()) << name << ": " << cmp;
  }
  for (const auto& [name, b] : gpu.named_buffers()) {
    const std::string cmp = testing::compare(b.cpu(), cpu.named_buffers().at(name), 1e-5, 1e-4);
    EXPECT_TRUE(cmp.empty()) << name << ": " << cmp;
  }
}

TEST(NnGpu, ToMovesParametersBuffersAndGradsInPlace) {
  LOOM_REQUIRE_CUDA();
  auto bn = std::make_shared<BatchNorm2d>(4);
  Sequential model{std::make_shared<Conv2d>(3, 4, 3), bn};
  Tensor held = model.parameters()[0];
  sum(model.forward(randn({2, 3, 8, 8}))).backward();
  model.to(kCUDA);
  EXPECT_TRUE(held.is_cuda());
  EXPECT_TRUE(held.grad().is_cuda());
  EXPECT_TRUE(bn->running_mean.is_cuda());
  EXPECT_TRUE(bn->num_batches_tracked.is_cuda());
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(model.device(), kCUDA);
  sum(model.forward(randn({2, 3, 8, 8}, kCUDA))).backward();
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  model.to(kCPU);
  EXPECT_FALSE(held.is_cuda());
}

TEST(NnGpu, SeedCnnForwardBackwardParity) {
  LOOM_REQUIRE_CUDA();
  auto cpu = seed_cnn();
  ModulePtr gpu = cuda_twin(*cpu);
  const testing_zoo::Batch batch = testing_zoo::random_images(8, kCPU, 5);
  expect_parity(*cpu, *gpu, batch.images, batch.labels);
}

TEST(NnGpu, ResNet18TrainingModeParity) {
  LOOM_REQUIRE_CUDA();
  auto cpu = resnet18();
  ModulePtr gpu = cuda_twin(*cpu);
  const testing_zoo::Batch batch = testing_zoo::random_images(4, kCPU, 6);
  const Tensor small = batch.images.narrow(2, 0, 16).narrow(3, 0, 16).contiguous();
  expect_parity(*cpu, *gpu, small, batch.labels);
  cpu->eval();
  gpu->eval();
  const ConvTf32Scope full_float32(false);
  EXPECT_TENSOR_NEAR(gpu->forward(small.to(kCUDA)).cpu(), cpu->forward(small), 1e-4, 1e-3);
}

TEST(NnGpu, LossesParity) {
  LOOM_REQUIRE_CUDA();
  const Tensor logits = randn({6, 5}) * 3.0;
  const Tensor classes = randint(0, 5, {6});
  const Tensor probs = rand({6, 5});
  const Tensor soft = rand({6, 5});
  const auto on = [](const Tensor& t) { return t.to(kCUDA); };
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    EXPECT_TENSOR_NEAR(cross_entropy(on(logits), on(classes), r, 0.1).cpu(),
                       cross_entropy(logits, classes, r, 0.1), 1e-5, 1e-5);
    EXPECT_TENSOR_NEAR(binary_cross_entropy_with_logits(on(logits), on(soft), r).cpu(),
                       binary_cross_entropy_with_logits(logits, soft, r), 1e-5, 1e-5);
    EXPECT_TENSOR_NEAR(binary_cross_entropy(on(probs), on(soft), r).cpu(),
                       binary_cross_entropy(probs, soft, r), 1e-5, 1e-5);
    EXPECT_TENSOR_NEAR(mse_loss(on(probs), on(soft), r).cpu(), mse_loss(probs, soft, r), 1e-6,
                       1e-5);
  }
  EXPECT_LOOM_ERROR(mse_loss(on(probs), soft), "mse_loss: input on cuda:0 but targets on cpu");
}

TEST(NnGpu, SummaryOfAGpuModel) {
  LOOM_REQUIRE_CUDA();
  auto model = classic_cnn();
  model->to(kCUDA);
  EXPECT_NE(model->summary({3, 64, 64}).find("Total params: 813,217"), std::string::npos);
}

TEST(NnGpu, ClassicCnnMemorisesSixtyFourImagesOnGpu) {
  LOOM_REQUIRE_CUDA();
  manual_seed(0);
  Generator init(1);
  auto model = classic_cnn(Init::Keras, &init);
  model->to(kCUDA);
  const testing_zoo::Batch batch = testing_zoo::random_images(64, kCUDA, 2);
  const double before = testing_zoo::accuracy(*model, batch);
  const int steps = testing_zoo::memorise(*model, batch, 200);
  EXPECT_GT(steps, 0) << "not memorised in 200 Adam steps (accuracy before: " << before << ")";
  EXPECT_EQ(testing_zoo::accuracy(*model, batch), 1.0);
}

}  // namespace
}  // namespace loom::nn
