// A PyTorch state_dict (as safetensors.torch.save_file writes it) made into one of loom's zoo
// models: the PyTorch names mapped to loom's through the model's name map, the head's size read
// from its weight (1 logit: sigmoid + binary cross-entropy; K > 1: softmax + cross-entropy), and
// batch norm's buffers loaded with the weights. `loom-catdog import` is its command line.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/nn/named_tensors.h"
#include "loom/nn/sequential.h"

namespace loom::io {

// The zoo models a PyTorch state_dict can be imported into: seed_cnn, classic_cnn, resnet18.
const std::vector<std::string>& torch_importable_models();

// One entry of a zoo model's name map: the name in PyTorch's state_dict and in loom's.
struct TorchName {
  std::string torch;
  std::string loom;
  bool optional = false;  // may be absent from the file (batch norm's num_batches_tracked)
};

// The name map of `model` with `num_outputs` head rows, in loom's state_dict order. The PyTorch
// definitions it fits are apps/catdog/README.md's ("Importing from PyTorch"): nn.Sequential's
// indices for seed_cnn and classic_cnn, torchvision's resnet18 names (conv1, bn1, layerN.B.*,
// downsample.0/1, fc) for resnet18. Throws naming an unknown model.
std::vector<TorchName> torch_name_map(const std::string& model, int64_t num_outputs = 1);

// The name of `model`'s head weight ([outputs, features]) in PyTorch's state_dict.
std::string torch_head_name(const std::string& model);

// The wrappers' prefixes removed from every name: "module." (nn.DataParallel, DDP) and
// "_orig_mod." (torch.compile), as often as they nest. Throws when two names become one.
nn::NamedTensors strip_torch_wrappers(const nn::NamedTensors& torch_state);

struct TorchImport {
  std::shared_ptr<nn::Sequential> model;  // in eval mode
  int64_t num_outputs = 1;                // 1: sigmoid + BCE head; K > 1: softmax over K
  std::vector<std::string> notes;         // what was assumed, e.g. an absent optional buffer
};

// Builds `model` with the head size of the file's head weight and loads every tensor through
// the name map. Throws loom::Error naming the tensors that are missing, unexpected or of the
// wrong shape (and, for resnet18, torchvision's 7x7 ImageNet stem, which loom's does not have).
TorchImport import_torch_state_dict(const std::string& model, const nn::NamedTensors& torch_state);

}  // namespace loom::io
