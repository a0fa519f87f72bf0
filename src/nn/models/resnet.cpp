// ResNet-18: BasicBlock and the stage layout.
#include "nn/models/resnet.h"

#include <nlohmann/json.hpp>

#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/pooling.h"
#include "ops/activation.h"
#include "ops/elementwise.h"

namespace loom::nn {

namespace {

std::shared_ptr<Conv2d> conv3x3(int64_t in, int64_t out, int64_t stride) {
  return std::make_shared<Conv2d>(in, out, 3, Conv2dOptions().stride(stride).padding(1),
                                  /*bias=*/false);
}

}  // namespace

BasicBlock::BasicBlock(int64_t in_channels, int64_t out_channels, int64_t stride)
    : in_channels_(in_channels), out_channels_(out_channels), stride_(stride) {
  LOOM_CHECK(stride >= 1, "BasicBlock: stride must be at least 1, got ", stride);
  conv1_ = register_module("conv1", conv3x3(in_channels, out_channels, stride));
  bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(out_channels));
  conv2_ = register_module("conv2", conv3x3(out_channels, out_channels, 1));
  bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    auto shortcut = std::make_shared<Sequential>();
    shortcut
        ->add(std::make_shared<Conv2d>(in_channels, out_channels, 1, Conv2dOptions().stride(stride),
                                       /*bias=*/false))
        .add(std::make_shared<BatchNorm2d>(out_channels));
    downsample_ = register_module("downsample", shortcut);
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = relu(bn1_->forward(conv1_->forward(x)));
  out = bn2_->forward(conv2_->forward(out));
  return relu(out + (downsample_ ? downsample_->forward(x) : x));
}

std::string BasicBlock::config_json() const {
  return nlohmann::json{
      {"in_channels", in_channels_}, {"out_channels", out_channels_}, {"stride", stride_}}
      .dump();
}

std::shared_ptr<BasicBlock> BasicBlock::from_config(const std::string& config_json) {
  const auto c = nlohmann::json::parse(config_json);
  return std::make_shared<BasicBlock>(c.at("in_channels").get<int64_t>(),
                                      c.at("out_channels").get<int64_t>(),
                                      c.value("stride", int64_t{1}));
}

std::shared_ptr<Sequential> resnet18(int64_t num_outputs, Init init, Generator* gen) {
  LOOM_CHECK(num_outputs >= 1, "resnet18: num_outputs must be at least 1, got ", num_outputs);
  auto model = std::make_shared<Sequential>();
  model->add("conv1", conv3x3(3, 64, 1))
      .add("bn1", std::make_shared<BatchNorm2d>(64))
      .add("relu", std::make_shared<ReLU>());
  int64_t channels = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = widths[stage];
    auto layer = std::make_shared<Sequential>();
    layer->add(std::make_shared<BasicBlock>(channels, width, stage == 0 ? 1 : 2))
        .add(std::make_shared<BasicBlock>(width, width, 1));
    model->add("layer" + std::to_string(stage + 1), layer);
    channels = width;
  }
  model->add("avgpool", std::make_shared<GlobalAvgPool2d>())
      .add("fc", std::make_shared<Linear>(512, num_outputs));
  model->init_parameters(init, gen);
  return model;
}

}  // namespace loom::nn
