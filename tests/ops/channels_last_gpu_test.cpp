// Channels-last (NHWC) on CUDA: convolution (cuDNN with NHWC descriptors, the fused bias + relu
// pass, the bias gradient, Keras' asymmetric padding), batch norm (the channels-last sums),
// max and average pooling and elementwise ops each keep the layout in their output and input
// gradient, and agree with the CPU's NCHW computation on the same values; whole models (the
// zoo's classic_cnn and a ResNet block) train alike in both layouts, eagerly and captured, and
// with channels-last weights bit for bit as with NCHW ones.
#include "parity.h"

namespace loom {
namespace {

constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

// f on CPU leaves (NCHW) and on CUDA leaves of the same values whose first input is
// channels-last, through the one parity checker; then the layouts: the output channels-last
// (when `out_cl`) and so the first input's gradient, the other inputs' (NCHW weights) NCHW.
void expect_channels_last_parity(const testing::Function& f, const std::vector<Tensor>& values,
                                 bool out_cl = true) {
  testing::ParityOptions options;
  options.cuda_format = kCL;
  const testing::ParityRun gpu = testing::expect_cuda_parity(f, values, options);
  ASSERT_EQ(gpu.leaves[0].suggest_memory_format(), kCL);
  if (out_cl) {
    EXPECT_EQ(gpu.output.suggest_memory_format(), kCL)
        << "strides " << shape_str(gpu.output.strides());
  }
  ASSERT_TRUE(gpu.leaves[0].grad().defined());
  EXPECT_EQ(gpu.leaves[0].grad().suggest_memory_format(), kCL)
      << "strides " << shape_str(gpu.leaves[0].grad().strides());
  for (size_t i = 1; i < values.size(); ++i) {
    ASSERT_TRUE(gpu.leaves[i].grad().defined()) << "input " << i;
    EXPECT_TRUE(gpu.leaves[i].grad().is_contiguous()) << "input " << i;
  }
}

struct ConvCase {
  Shape x, w;
  Conv2dOptions opt;
};

TEST(ChannelsLastCuda, Conv2dMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  const std::vector<ConvCase> cases = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, Conv2dOptions()},
      {{3, 3, 64, 64}, {32, 3, 3, 3}, Conv2dOptions().stride(3)},  // seed_cnn's first layer
      {{2, 4, 11, 10}, {6, 4, 3, 2}, Conv2dOptions().stride(2).padding(1)},
      {{1, 2, 9, 9}, {3, 2, 3, 3}, Conv2dOptions().dilation(2).padding(2)},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, Conv2dOptions().stride(2).padding(Padding::Same)},  // asymmetric
      {{2, 8, 5, 5}, {16, 8, 1, 1}, Conv2dOptions().stride(2)},  // a downsample
      {{4, 16, 16, 16}, {32, 16, 3, 3}, Conv2dOptions().padding(1)},
      // 12800 outputs a channel: the channels-last bias gradient sums several chunks.
      {{8, 3, 40, 40}, {36, 3, 3, 3}, Conv2dOptions().padding(1)},
  };
  uint64_t seed = 1;
  for (const ConvCase& c : cases) {
    Generator gen(seed++);
    const Tensor x = randn(c.x, kFloat32, &gen), w = uniform(c.w, -0.5, 0.5, kFloat32, &gen);
    const Tensor b = randn({c.w[0]}, kFloat32, &gen);
    const Conv2dOptions opt = c.opt;
    SCOPED_TRACE("x " + shape_str(c.x) + " w " + shape_str(c.w));
    expect_channels_last_parity(
        [opt](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], opt); },
        {x, w, b});
    expect_channels_last_parity(
        [opt](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), opt); },
        {x, w});
    // The fused bias + relu pass, channel-fastest (vectorised when the channels are a multiple of
    // 4).
    expect_channels_last_parity(
        [opt](const std::vector<Tensor>& in) { return conv2d_relu(in[0], in[1], in[2], opt); },
        {x, w, b});
  }
}

// bfloat16 data: the channels-last kernels (tensor cores) against the NCHW ones on the same
// bf16 values, both within bf16's rounding of float32's answer.
TEST(ChannelsLastCuda, Bf16Conv2dMatchesNchw) {
  LOOM_REQUIRE_CUDA();
  Generator gen(7);
  const Tensor x = randn({4, 16, 12, 12}, kFloat32, &gen).to(kBFloat16).cuda();
  const Tensor w = uniform({32, 16, 3, 3}, -0.3, 0.3, kFloat32, &gen).to(kBFloat16).cuda();
  const Tensor b = randn({32}, kFloat32, &gen).to(kBFloat16).cuda();
  const Conv2dOptions opt = Conv2dOptions().padding(1);
  const Tensor nchw = conv2d_relu(x, w, b, opt);
  const Tensor cl = conv2d_relu(x.contiguous(kCL), w, b, opt);
  EXPECT_EQ(cl.suggest_memory_format(), kCL);
  EXPECT_EQ(cl.dtype(), kBFloat16);
  const Tensor reference =
      relu(conv2d(x.cpu().to(kFloat32), w.cpu().to(kFloat32), b.cpu().to(kFloat32), opt));
  // 144 products of bf16 inputs accumulated in float32, one bf16 rounding of the result.
  EXPECT_TENSOR_NEAR(cl.cpu().to(kFloat32), reference, 2e-2, 1e-2);
  EXPECT_TENSOR_NEAR(nchw.cpu().to(kFloat32), reference, 2e-2, 1e-2);
}

TEST(ChannelsLastCuda, BatchNormMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  // 37 channels: a partial tile of 32; {16, 64, 24, 24}: 9216 rows, several chunks a tile.
  for (Shape shape :
       {Shape{8, 16, 10, 10}, Shape{2, 37, 5, 5}, Shape{16, 64, 24, 24}, Shape{4, 3, 7, 7}}) {
    Generator gen(shape[1]);
    const Tensor x = uniform(shape, -1.5, 2.5, kFloat32, &gen);
    const Tensor w = uniform({shape[1]}, 0.5, 1.5, kFloat32, &gen),
                 b = randn({shape[1]}, kFloat32, &gen);
    SCOPED_TRACE("x " + shape_str(shape));
    expect_channels_last_parity(
        [](const std::vector<Tensor>& in) {
          return batch_norm(in[0], in[1], in[2], Tensor(), Tensor(), true);
        },
        {x, w, b});
    const Tensor rm = randn({shape[1]}, kFloat32, &gen),
                 rv = uniform({shape[1]}, 0.5, 2.0, kFloat32, &gen);
    const Tensor rm_gpu = rm.cuda(), rv_gpu = rv.cuda();
    expect_channels_last_parity(
        [rm, rv, rm_gpu, rv_gpu](const std::vector<Tensor>& in) {
          const bool gpu = in[0].is_cuda();
          return batch_norm(in[0], in[1], in[2], gpu ? rm_gpu : rm, gpu ? rv_gpu : rv, false);
        },
        {x, w, b});
  }
}

TEST(ChannelsLastCuda, FusedBatchNormReluMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  for (Shape shape : {Shape{8, 16, 10, 10}, Shape{2, 37, 5, 5}, Shape{16, 64, 24, 24}}) {
    Generator gen(shape[1] + 50);
    const Tensor x = uniform(shape, -1.5, 2.5, kFloat32, &gen);
    const Tensor w = uniform({shape[1]}, -1.5, 1.5, kFloat32, &gen),
                 b = randn({shape[1]}, kFloat32, &gen);
    SCOPED_TRACE("x " + shape_str(shape));
    expect_channels_last_parity(
        [](const std::vector<Tensor>& in) {
          return batch_norm_relu(in[0], in[1], in[2], Tensor(), Tensor(), true);
        },
        {x, w, b});
  }
}

TEST(ChannelsLastCuda, BatchNormRunningStatisticsMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(6);
  Tensor rm = zeros({40}), rv = ones({40});
  Tensor rm_gpu = rm.cuda(), rv_gpu = rv.cuda();
  for (int step = 0; step < 3; ++step) {
    const Tensor x = uniform({6, 40, 9, 9}, -1.0, 3.0, kFloat32, &gen);
    batch_norm(x, Tensor(), Tensor(), rm, rv, true, 0.1);
    batch_norm(x.cuda().contiguous(kCL), Tensor(), Tensor(), rm_gpu, rv_gpu, true, 0.1);
  }
  EXPECT_TENSOR_NEAR(rm_gpu.cpu(), rm, 1e-6, 1e-5);
  EXPECT_TENSOR_NEAR(rv_gpu.cpu(), rv, 1e-6, 1e-5);
}

TEST(ChannelsLastCuda, PoolingMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(11);
  const Tensor x = randn({3, 24, 13, 12}, kFloat32, &gen);
  struct PoolCase {
    const char* name;
    std::function<Tensor(const Tensor&)> pool;
  };
  const std::vector<PoolCase> cases = {
      {"max 2x2 (cells backward)", [](const Tensor& t) { return max_pool2d(t, 2); }},
      {"max 3x3/2 pad 1 (gather backward)", [](const Tensor& t) { return max_pool2d(t, 3, 2, 1); }},
      {"max 3x2/1",
       [](const Tensor& t) {
         return max_pool2d(t, {3, 2}, 1);
       }},
      {"avg 3x3/2 pad 1", [](const Tensor& t) { return avg_pool2d(t, 3, 2, 1, false); }},
      {"adaptive avg 5x4", [](const Tensor& t) { return adaptive_avg_pool2d(t, 5, 4); }},
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto pool = c.pool;
    expect_channels_last_parity([pool](const std::vector<Tensor>& in) { return pool(in[0]); }, {x});
  }
  // Global average pooling ends with one pixel: both layouts at once, so no layout to check.
  expect_channels_last_parity(
      [](const std::vector<Tensor>& in) { return global_avg_pool2d(in[0]); }, {x}, false);
}

TEST(ChannelsLastCuda, ElementwiseOpsKeepTheLayout) {
  LOOM_REQUIRE_CUDA();
  Generator gen(12);
  const Tensor x = randn({2, 12, 5, 6}, kFloat32, &gen), y = randn({2, 12, 5, 6}, kFloat32, &gen);
  const Tensor bias = randn({12, 1, 1}, kFloat32, &gen);
  const Tensor y_gpu = y.cuda(), bias_gpu = bias.cuda();
  expect_channels_last_parity(
      [y, y_gpu, bias, bias_gpu](const std::vector<Tensor>& in) {
        const bool gpu = in[0].is_cuda();
        return relu(in[0] * (gpu ? y_gpu : y) + (gpu ? bias_gpu : bias)) + in[0];
      },
      {x});
}

// Two copies of one model, one fed NCHW and the other channels-last, step for step on the GPU:
// the same losses and parameters (cuDNN's NHWC and NCHW algorithms differ in rounding only).
void expect_layouts_train_alike(const std::function<std::shared_ptr<nn::Module>()>& make,
                                const Shape& input, int steps) {
  const ConvTf32Scope full_float32(false);
  auto nchw_model = make(), cl_model = make();
  nchw_model->to(kCUDA);
  cl_model->to(kCUDA);
  optim::Adam nchw_opt(nchw_model->parameters(), optim::GroupOptions().with_lr(1e-3));
  optim::Adam cl_opt(cl_model->parameters(), optim::GroupOptions().with_lr(1e-3));
  Generator gen(21);
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor x = uniform(input, -1.0, 1.0, kFloat32, &gen).cuda();
    const Tensor labels = randint(0, 2, {input[0], 1}, kInt64, &gen).to(kCUDA, kFloat32);
    const Tensor loss_nchw = nn::binary_cross_entropy_with_logits(nchw_model->forward(x), labels);
    const Tensor loss_cl =
        nn::binary_cross_entropy_with_logits(cl_model->forward(x.contiguous(kCL)), labels);
    EXPECT_NEAR(loss_cl.item<double>(), loss_nchw.item<double>(), 1e-5);
    nchw_opt.zero_grad();
    cl_opt.zero_grad();
    loss_nchw.backward();
    loss_cl.backward();
    const auto pn = nchw_model->parameters(), pc = cl_model->parameters();
    for (size_t i = 0; i < pn.size(); ++i) {
      EXPECT_TRUE(pc[i].grad().is_contiguous()) << "parameter " << i;
      EXPECT_TENSOR_NEAR(pc[i].grad().cpu(), pn[i].grad().cpu(), 1e-5, 1e-3);
    }
    nchw_opt.step();
    cl_opt.step();
  }
  const auto pn = nchw_model->parameters(), pc = cl_model->parameters();
  for (size_t i = 0; i < pn.size(); ++i) EXPECT_TENSOR_NEAR(pc[i].cpu(), pn[i].cpu(), 1e-5, 1e-3);
}

TEST(ChannelsLastCuda, ClassicCnnTrainsAlikeInBothLayouts) {
  LOOM_REQUIRE_CUDA();
  expect_layouts_train_alike(
      [] {
        Generator gen(3);
        return std::shared_ptr<nn::Module>(nn::classic_cnn(nn::Init::Keras, &gen));
      },
      {8, 3, 64, 64}, 3);
}

TEST(ChannelsLastCuda, ResNetBlocksTrainAlikeInBothLayouts) {
  LOOM_REQUIRE_CUDA();
  expect_layouts_train_alike(
      [] {
        Generator gen(4);
        auto model = std::make_shared<nn::Sequential>();
        model->add(std::make_shared<nn::Conv2d>(3, 16, 3, Conv2dOptions().padding(1), false))
            .add(std::make_shared<nn::BatchNorm2d>(16))
            .add(std::make_shared<nn::ReLU>())
            .add(std::make_shared<nn::BasicBlock>(16, 16, 1))
            .add(std::make_shared<nn::BasicBlock>(16, 32, 2))
            .add(std::make_shared<nn::GlobalAvgPool2d>())
            .add(std::make_shared<nn::Linear>(32, 1));
        model->init_parameters(nn::Init::PyTorch, &gen);
        return std::shared_ptr<nn::Module>(model);
      },
      {6, 3, 16, 16}, 3);
}

// A captured step keeps a channels-last batch channels-last (its static input has the batch's
// layout) and replays what the eager channels-last step computes.
TEST(ChannelsLastCuda, CapturedStepsReplayTheEagerChannelsLastStep) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic;
  auto make = [] {
    Generator gen(5);
    return nn::classic_cnn(nn::Init::Keras, &gen);
  };
  auto eager_model = make(), graph_model = make();
  eager_model->to(kCUDA);
  graph_model->to(kCUDA);
  optim::Adam eager_opt(eager_model->parameters(), optim::GroupOptions().with_lr(1e-3));
  optim::Adam graph_opt(graph_model->parameters(), optim::GroupOptions().with_lr(1e-3));
  const train::LossFn loss = train::binary_cross_entropy_loss();
  train::CapturedStep step(*graph_model, loss, graph_opt);
  Generator gen(22);
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const Tensor x = uniform({8, 3, 64, 64}, -1.0, 1.0, kFloat32, &gen).cuda().contiguous(kCL);
    const Tensor labels = randint(0, 2, {8, 1}, kInt64, &gen).to(kCUDA, kFloat32);
    const Tensor eager_loss = loss(eager_model->forward(x), labels);
    eager_opt.zero_grad();
    eager_loss.backward();
    eager_opt.step();
    const train::CapturedStep::Result r = step.run(x, labels);
    EXPECT_EQ(r.loss.item<float>(), eager_loss.item<float>());
  }
  EXPECT_GE(step.replays(), 3);
  const auto pe = eager_model->parameters(), pg = graph_model->parameters();
  for (size_t i = 0; i < pe.size(); ++i) EXPECT_TENSOR_NEAR(pg[i].cpu(), pe[i].cpu(), 0.0, 0.0);
}

// Channels-last weights (Module::to) change where the layout copies happen, not the maths: in
// bf16 under autocast, eagerly and captured, a model whose weights are channels-last trains
// bit for bit as its NCHW-weight twin on the same channels-last batches, and stays channels-last.
TEST(ChannelsLastCuda, ChannelsLastWeightsTrainBitForBitAsNchwWeights) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic;
  auto make = [](bool cl_weights) {
    Generator gen(6);
    auto model = std::make_shared<nn::Sequential>();
    model->add(std::make_shared<nn::Conv2d>(3, 16, 3, Conv2dOptions().padding(1), false))
        .add(std::make_shared<nn::BatchNorm2d>(16))
        .add(std::make_shared<nn::ReLU>())
        .add(std::make_shared<nn::BasicBlock>(16, 32, 2))
        .add(std::make_shared<nn::GlobalAvgPool2d>())
        .add(std::make_shared<nn::Linear>(32, 1));
    model->init_parameters(nn::Init::PyTorch, &gen);
    model->to(kCUDA);
    if (cl_weights) model->to(kCL);
    return model;
  };
  auto nchw = make(false), eager = make(true), graph = make(true);
  optim::Adam nchw_opt(nchw->parameters(), optim::GroupOptions().with_lr(1e-3));
  optim::Adam eager_opt(eager->parameters(), optim::GroupOptions().with_lr(1e-3));
  optim::Adam graph_opt(graph->parameters(), optim::GroupOptions().with_lr(1e-3));
  const train::LossFn loss = train::binary_cross_entropy_loss();
  train::CapturedStep::Options options;
  options.autocast = true;
  train::CapturedStep step(*graph, loss, graph_opt, options);
  auto eager_step = [&](nn::Module& model, optim::Optimizer& opt, const Tensor& x,
                        const Tensor& y) {
    const Tensor l = loss(train::forward(model, x, /*autocast=*/true), y);
    opt.zero_grad();
    l.backward();
    opt.step();
    return l.item<float>();
  };
  Generator gen(23);
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const Tensor x = uniform({8, 3, 16, 16}, -1.0, 1.0, kFloat32, &gen).cuda().contiguous(kCL);
    const Tensor y = randint(0, 2, {8, 1}, kInt64, &gen).to(kCUDA, kFloat32);
    const float reference = eager_step(*nchw, nchw_opt, x, y);
    EXPECT_EQ(eager_step(*eager, eager_opt, x, y), reference);
    EXPECT_EQ(step.run(x, y).loss.item<float>(), reference);
  }
  EXPECT_GE(step.replays(), 3);
  const auto pn = nchw->parameters(), pe = eager->parameters(), pg = graph->parameters();
  for (size_t i = 0; i < pn.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    EXPECT_TENSOR_NEAR(pe[i].cpu(), pn[i].cpu(), 0.0, 0.0);
    EXPECT_TENSOR_NEAR(pg[i].cpu(), pn[i].cpu(), 0.0, 0.0);
    if (pn[i].dim() == 4) EXPECT_TRUE(pe[i].is_contiguous(kCL) && pg[i].is_contiguous(kCL));
  }
}

}  // namespace
}  // namespace loom
