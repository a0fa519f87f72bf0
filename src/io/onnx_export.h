// ONNX export of a loom module for inference: opset 17 (IR version 8), float32, the batch
// dimension left free ("N") and the others fixed by the example shape given. The graph is the
// module in eval mode (batch norm with its running statistics, dropout as the identity).
// Exportable: Sequential, Conv2d, Linear, BatchNorm2d, ReLU, LeakyReLU, Sigmoid, Tanh, Softmax,
// Flatten (not over the batch), Identity, Dropout, MaxPool2d, AvgPool2d, GlobalAvgPool2d and
// the zoo's BasicBlock, so seed_cnn, classic_cnn and resnet18; anything else is refused with a
// loom::Error naming the layer. docs/onnx.md shows the command line and what each layer becomes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/nn/module.h"
#include "loom/tensor/shape.h"

namespace loom::io {

constexpr int64_t kOnnxOpset = 17;
constexpr int64_t kOnnxIrVersion = 8;  // the IR version that opset 17 came with

struct OnnxExportOptions {
  std::string input_name = "input";
  std::string output_name = "output";
  // Also turn logits into probabilities as nn::predict does: a sigmoid for one output, a
  // softmax over the last dimension for several.
  bool probabilities = false;
  // ModelProto.metadata_props (e.g. the class names): key, value.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The bytes of an ONNX ModelProto of `module` for inputs [N, example_shape...] (e.g. {3, 64, 64}).
// Runs one example through the module (eval mode and no gradients, each module's mode restored)
// to learn every layer's output shape; throws loom::Error naming a layer that cannot be
// exported or an example shape the module does not take.
std::string onnx_model_bytes(nn::Module& module, const Shape& example_shape,
                             const OnnxExportOptions& options = {});

// onnx_model_bytes written to `path` atomically (io/atomic_file.h).
void export_onnx(nn::Module& module, const Shape& example_shape, const std::string& path,
                 const OnnxExportOptions& options = {});

}  // namespace loom::io
