// ResNet-18 for small (64x64) images: a 3x3 stride-1 stem without the initial max pool, four
// stages of two BasicBlocks (64, 128, 256, 512 channels; stages 2-4 halve the resolution),
// global average pooling and one Linear head. Parameter names follow torchvision
// ("layer1.0.conv1.weight", "layer2.0.downsample.0.weight", "fc.bias").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/nn/batch_norm.h"
#include "loom/nn/conv.h"
#include "loom/nn/sequential.h"

namespace loom::nn {

// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); conv1 carries the stride, and the
// shortcut is a 1x1 conv + BatchNorm ("downsample") when the stride or channel count changes.
class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in_channels, int64_t out_channels, int64_t stride = 1);

  Tensor forward(const Tensor& x) override;

  std::string type_name() const override { return "BasicBlock"; }
  std::string config_json() const override;
  static std::shared_ptr<BasicBlock> from_config(const std::string& config_json);
  // The state_layout() of from_config(config_json), without building it (see nn::spec_state).
  static std::vector<StateEntry> state_of_config(const std::string& config_json);
  // What forward() makes of one example's shape, without building it (see nn::SpecShapes).
  static ShapeRule shape_rule_of_config(const std::string& config_json);

  int64_t in_channels() const { return in_channels_; }

 private:
  int64_t in_channels_, out_channels_, stride_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> downsample_;  // null when the shortcut is the identity
};

// num_outputs = 1: a binary head (one logit; nn::predict applies the sigmoid); N > 1: N class
// logits (train with cross_entropy). With one output: 11,169,345 parameters. The stem is the
// CIFAR one, a 3x3 convolution without max-pooling; `stem_stride` 2 makes it halve the image,
// which quarters the network's work on larger inputs (96-pixel photographs) for the same weights.
std::shared_ptr<Sequential> resnet18(int64_t num_outputs = 1, Init init = Init::PyTorch,
                                     Generator* gen = nullptr, int64_t stem_stride = 1);

}  // namespace loom::nn
