// ResNet-18: BasicBlock and the stage layout.
#include "loom/nn/models/resnet.h"

#include <nlohmann/json.hpp>

#include "loom/nn/activation.h"
#include "loom/nn/linear.h"
#include "loom/nn/pooling.h"
#include "loom/nn/untrusted_json.h"
#include "loom/ops/activation.h"
#include "loom/ops/elementwise.h"

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
  const Tensor out = bn1_->forward_relu(conv1_->forward(x));
  return add_relu(bn2_->forward(conv2_->forward(out)), downsample_ ? downsample_->forward(x) : x);
}

std::string BasicBlock::config_json() const {
  return nlohmann::json{
      {"in_channels", in_channels_}, {"out_channels", out_channels_}, {"stride", stride_}}
      .dump();
}

namespace {

struct BasicBlockConfig {
  int64_t in_channels, out_channels, stride;
};

BasicBlockConfig parse_block_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "BasicBlock spec");
  const JsonObject c(j, "BasicBlock spec");
  return {c.integer("in_channels", 1, kMaxSpecInteger),
          c.integer("out_channels", 1, kMaxSpecInteger),
          c.integer("stride", 1, kMaxSpecInteger, 1)};
}

}  // namespace

std::shared_ptr<BasicBlock> BasicBlock::from_config(const std::string& config_json) {
  const BasicBlockConfig c = parse_block_config(config_json);
  return std::make_shared<BasicBlock>(c.in_channels, c.out_channels, c.stride);
}

// The constructor's children: conv1, bn1, conv2, bn2 and, when the shape changes, downsample.
std::vector<StateEntry> BasicBlock::state_of_config(const std::string& config_json) {
  const BasicBlockConfig c = parse_block_config(config_json);
  const int64_t in = c.in_channels, out = c.out_channels;
  const std::vector<StateEntry> bn =
      BatchNorm2d::state_of_config(nlohmann::json{{"num_features", out}}.dump());
  std::vector<StateEntry> state;
  auto add = [&](const std::string& prefix, const std::vector<StateEntry>& entries) {
    for (const StateEntry& e : entries) state.push_back({prefix + e.name, e.shape, e.dtype});
  };
  add("conv1.", {{"weight", {out, in, 3, 3}, kFloat32}});
  add("bn1.", bn);
  add("conv2.", {{"weight", {out, out, 3, 3}, kFloat32}});
  add("bn2.", bn);
  if (c.stride != 1 || in != out) {
    add("downsample.0.", {{"weight", {out, in, 1, 1}, kFloat32}});
    add("downsample.1.", bn);
  }
  return state;
}

// [in_channels, H, W] -> [out_channels, OH, OW]: conv1's geometry, which conv2 (3x3, padding 1)
// keeps and the downsample (1x1, the same stride) matches, so the sum always fits.
ShapeRule BasicBlock::shape_rule_of_config(const std::string& config_json) {
  const BasicBlockConfig c = parse_block_config(config_json);
  const std::string name =
      "BasicBlock(" + std::to_string(c.in_channels) + " -> " + std::to_string(c.out_channels) + ")";
  const Conv2dOptions conv1 = Conv2dOptions().stride(c.stride).padding(1);
  return [c, name, conv1](const Shape& x) {
    if (!is_image_of(x, c.in_channels)) return not_an_image(x, c.in_channels, name);
    return fits(
        {c.out_channels, conv2d_axis(conv1, 0, x[1], 3).out, conv2d_axis(conv1, 1, x[2], 3).out});
  };
}

std::shared_ptr<Sequential> resnet18(int64_t num_outputs, Init init, Generator* gen,
                                     int64_t stem_stride) {
  LOOM_CHECK(num_outputs >= 1, "resnet18: num_outputs must be at least 1, got ", num_outputs);
  LOOM_CHECK(stem_stride >= 1 && stem_stride <= 4, "resnet18: stem_stride must be 1 to 4, got ",
             stem_stride);
  auto model = std::make_shared<Sequential>();
  model->add("conv1", conv3x3(3, 64, stem_stride))
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
