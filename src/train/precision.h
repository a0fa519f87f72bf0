// The numeric precision a training program runs in, as one name for the apps' --precision flag:
//   fp32  float32 everywhere, convolutions included (no TF32);
//   tf32  float32 with cuDNN's convolutions on TF32 tensor cores (loom's default, as PyTorch's
//         cudnn.allow_tf32);
//   bf16  mixed precision: the forward pass under loom::Autocast (convolutions and matrix
//         products in bfloat16 with float32 accumulation, tensor/autocast.h), losses, the
//         optimizer and the master weights in float32.
// On the CPU all three compute in float32 (autocast leaves CPU tensors alone).
#pragma once

#include <optional>
#include <string>

#include "loom/nn/module.h"

namespace loom::train {

enum class Precision { Float32, TF32, BFloat16 };

std::optional<Precision> precision_from_name(const std::string& name);  // "fp32", "tf32", "bf16"
const char* precision_name(Precision precision);

// Sets the process-wide switch that `precision` implies (conv TF32: off for fp32, on otherwise);
// autocast itself is per forward pass: FitOptions::autocast, CapturedStep::Options::autocast.
void use_precision(Precision precision);

// model.forward(inputs), under loom::Autocast when `autocast`, with the output widened to
// float32 then, so losses, metrics and predictions see float32 (the gradient flows back
// through the widening as bfloat16).
Tensor forward(nn::Module& model, const Tensor& inputs, bool autocast);

// The images as fit and evaluate feed them to the model: channels-last
// (MemoryFormat::ChannelsLast) when `channels_last` and they are 4-D, else as they are.
Tensor model_input(const Tensor& images, bool channels_last);

}  // namespace loom::train
