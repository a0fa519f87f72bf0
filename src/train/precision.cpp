// --precision names and the autocast forward of precision.h.
#include "loom/train/precision.h"

#include "loom/ops/conv.h"
#include "loom/tensor/autocast.h"

namespace loom::train {

std::optional<Precision> precision_from_name(const std::string& name) {
  if (name == "fp32") return Precision::Float32;
  if (name == "tf32") return Precision::TF32;
  if (name == "bf16") return Precision::BFloat16;
  return std::nullopt;
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::Float32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::BFloat16:
      return "bf16";
  }
  return "?";
}

void use_precision(Precision precision) { set_conv_allow_tf32(precision != Precision::Float32); }

Tensor forward(nn::Module& model, const Tensor& inputs, bool autocast) {
  if (!autocast) return model.forward(inputs);
  Tensor outputs;
  {
    Autocast scope;
    outputs = model.forward(inputs);
  }
  return outputs.dtype() == kBFloat16 ? outputs.to(kFloat32) : outputs;
}

Tensor model_input(const Tensor& images, bool channels_last) {
  return channels_last && images.dim() == 4 ? images.contiguous(MemoryFormat::ChannelsLast)
                                            : images;
}

}  // namespace loom::train
