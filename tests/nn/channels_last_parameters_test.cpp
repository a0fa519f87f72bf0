// Channels-last parameters (Module::to(MemoryFormat)): the layout changes in place and nothing
// else does. A channels-last model trains bit for bit as its NCHW twin, the optimizer's state
// follows each parameter's layout however it was made, and state dicts and files hold NCHW
// order whatever the layout in memory.
#include <unistd.h>

#include <filesystem>

#include "testing.h"

namespace loom::nn {
namespace {

// Convolutions with and without bias, a batch norm (1-D parameters) and a linear head (2-D).
std::shared_ptr<Sequential> small_cnn(uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<Sequential>();
  model->add(
      std::make_shared<Conv2d>(3, 6, 3, Conv2dOptions().padding(1), true, Init::PyTorch, &gen));
  model->add(std::make_shared<ReLU>());
  model->add(std::make_shared<MaxPool2d>(2));
  model->add(
      std::make_shared<Conv2d>(6, 4, 3, Conv2dOptions().padding(1), false, Init::PyTorch, &gen));
  model->add(std::make_shared<BatchNorm2d>(4));
  model->add(std::make_shared<ReLU>());
  model->add(std::make_shared<Flatten>());
  model->add(std::make_shared<Linear>(4 * 4 * 4, 1, true, Init::PyTorch, &gen));
  return model;
}

// Adam steps first .. first + steps - 1 of a run: step s's random batch depends on s alone, so
// every model sees the same batches.
void train(Module& model, optim::Optimizer& adam, int first, int steps) {
  for (int s = first; s < first + steps; ++s) {
    Generator gen(100 + static_cast<uint64_t>(s));
    const Tensor x = randn({5, 3, 8, 8}, kFloat32, &gen);
    const Tensor y = randint(0, 2, {5, 1}, kFloat32, &gen);
    adam.zero_grad();
    binary_cross_entropy_with_logits(model.forward(x), y).backward();
    adam.step();
  }
}

std::vector<std::vector<float>> values(Module& model) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : model.parameters()) out.push_back(p.contiguous().to_vector<float>());
  return out;
}

bool is_channels_last(const Tensor& t) {
  return t.suggest_memory_format() == MemoryFormat::ChannelsLast;
}

TEST(ChannelsLastParameters, ToLaysOutFourDTensorsInPlaceAndLeavesTheRest) {
  auto model = small_cnn(1);
  auto conv = std::dynamic_pointer_cast<Conv2d>(model->children()[0]);
  Tensor held = conv->weight;  // a handle taken before the change
  const auto before = values(*model);
  binary_cross_entropy_with_logits(model->forward(randn({2, 3, 8, 8})), ones({2, 1})).backward();
  const std::vector<float> grad_before = held.grad().contiguous().to_vector<float>();

  model->to(MemoryFormat::ChannelsLast);
  EXPECT_TRUE(is_channels_last(held));
  EXPECT_TRUE(held.is_same(conv->weight));
  EXPECT_TRUE(held.requires_grad());
  EXPECT_TRUE(is_channels_last(held.grad()));
  EXPECT_EQ(held.grad().contiguous().to_vector<float>(), grad_before);
  EXPECT_EQ(values(*model), before);
  for (const Tensor& p : model->parameters()) {
    EXPECT_EQ(is_channels_last(p), p.dim() == 4) << shape_str(p.shape());
    if (p.dim() != 4) EXPECT_TRUE(p.is_contiguous());
  }

  model->to(MemoryFormat::Contiguous);
  EXPECT_TRUE(held.is_contiguous());
  EXPECT_EQ(values(*model), before);
}

TEST(ChannelsLastParameters, AChannelsLastModelTrainsBitForBitAsItsNchwTwin) {
  auto nchw = small_cnn(2);
  auto nhwc = small_cnn(2);
  nhwc->to(MemoryFormat::ChannelsLast);
  std::vector<const void*> memory;
  for (const Tensor& p : nhwc->parameters()) memory.push_back(p.raw_data());
  optim::Adam a(nchw->parameters(), optim::GroupOptions().with_lr(1e-2));
  optim::Adam b(nhwc->parameters(), optim::GroupOptions().with_lr(1e-2));
  train(*nchw, a, 0, 6);
  train(*nhwc, b, 0, 6);
  EXPECT_EQ(values(*nhwc), values(*nchw));
  const std::vector<Tensor> params = nhwc->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].raw_data(), memory[i]) << "parameter " << i << " was updated in a copy";
    EXPECT_EQ(is_channels_last(params[i]), params[i].dim() == 4);
    if (params[i].dim() == 4) EXPECT_TRUE(is_channels_last(params[i].grad()));
  }
}

TEST(ChannelsLastParameters, OptimizerStateFollowsTheLayoutMadeAfterItAndLoadedIntoIt) {
  // Reference: NCHW all along.
  auto reference = small_cnn(4);
  optim::Adam ref_adam(reference->parameters(), optim::GroupOptions().with_lr(1e-2));
  train(*reference, ref_adam, 0, 3);

  // Laid out channels-last after the optimizer already holds NCHW moments.
  auto model = small_cnn(4);
  optim::Adam adam(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  train(*model, adam, 0, 2);
  model->to(MemoryFormat::ChannelsLast);
  train(*model, adam, 2, 1);
  EXPECT_EQ(values(*model), values(*reference));

  // A checkpoint of the channels-last run resumes an NCHW model, and the other way round.
  auto nchw = small_cnn(9);
  optim::Adam nchw_adam(nchw->parameters(), optim::GroupOptions().with_lr(1e-2));
  nchw->load_state_dict(model->state_dict());
  nchw_adam.load_state_dict(adam.state_dict());
  auto nhwc = small_cnn(10);
  nhwc->to(MemoryFormat::ChannelsLast);
  optim::Adam nhwc_adam(nhwc->parameters(), optim::GroupOptions().with_lr(1e-2));
  nhwc->load_state_dict(reference->state_dict());
  nhwc_adam.load_state_dict(ref_adam.state_dict());
  EXPECT_TRUE(is_channels_last(nhwc->parameters()[0]));
  train(*reference, ref_adam, 3, 2);
  train(*model, adam, 3, 2);
  train(*nchw, nchw_adam, 3, 2);
  train(*nhwc, nhwc_adam, 3, 2);
  EXPECT_EQ(values(*model), values(*reference));
  EXPECT_EQ(values(*nchw), values(*reference));
  EXPECT_EQ(values(*nhwc), values(*reference));
}

TEST(ChannelsLastParameters, FilesHoldNchwOrder) {
  auto model = small_cnn(7);
  const NamedTensors nchw_state = model->state_dict();
  std::vector<std::vector<float>> expected;
  for (const auto& entry : nchw_state)
    expected.push_back(entry.second.contiguous().to_vector<float>());
  model->to(MemoryFormat::ChannelsLast);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("loom_cl_params_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  io::save_safetensors(path, model->state_dict());
  const io::TensorFile file = io::load_safetensors(path);
  std::filesystem::remove(path);
  ASSERT_EQ(file.tensors.size(), nchw_state.size());
  size_t i = 0;
  for (const auto& entry : nchw_state) {
    const Tensor& read = file.tensors.at(entry.first);
    EXPECT_TRUE(read.is_contiguous());
    EXPECT_EQ(read.to_vector<float>(), expected[i++]) << entry.first;
  }
}

}  // namespace
}  // namespace loom::nn
