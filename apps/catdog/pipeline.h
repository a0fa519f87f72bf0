// The pieces the subcommands share: the device flag, the input-size checks, the evaluation
// loader, a subset for quick runs, and the loss that fits a model's head (the photographs decoded
// once into memory are vision/image_set.h's, shared with loom-scaling).
#pragma once

#include <loom/loom.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vision/image_set.h"

namespace loom::catdog {

// --strict: any photograph that does not decode is an error (Throw); otherwise it is left out
// with a warning naming it (Skip).
data::OnBadInput on_bad_input(bool strict);

// A limit that keeps a model file's input size (its preprocessing) from costing unbounded memory
// in one evaluation batch (float32, the batch shrinks); vision::kMaxDecodedSetBytes bounds the
// decoded images. They are the last line: check_input_size comes first.
inline constexpr int64_t kMaxEvalBatchBytes = int64_t{256} << 20;

// Refuses, before any image is decoded, a model file or checkpoint (`source`) whose
// preprocessing asks for images its own spec does not take (nn::SpecShapes): a crafted file
// asking for 4096x4096 images of a 64x64 model would otherwise have a whole folder decoded at
// that size. The message names both sizes. Where the spec cannot pin the size (a fully
// convolutional model like resnet18, a layer type without a shape rule) kMaxEvalBatchBytes and
// vision::kMaxDecodedSetBytes are what bound the memory.
void check_input_size(const std::string& spec_json, const io::Preprocessing& p,
                      const std::string& source);

// `count` samples of `source` chosen by a seeded permutation (not stratified: a small count may
// leave a class out).
class Subset : public data::Dataset {
 public:
  Subset(const data::Dataset& source, int64_t count, uint64_t seed);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  data::Example get(int64_t index) const override { return source_.get(indices_[index]); }

 private:
  const data::Dataset& source_;
  std::vector<int64_t> indices_;
};

// In order, no augmentation: the preprocessing's rescale and mean/std only.
data::DataLoaderOptions eval_loader_options(const io::Preprocessing& p, int64_t batch_size,
                                            Device device, int workers,
                                            data::OnBadInput on_bad_input = data::OnBadInput::Skip);
data::AugmentOptions preprocessing_transform(const io::Preprocessing& p);

// Throws naming the model file and the image (image_of(row) for the row of outputs [N, ...]) at
// the first NaN or infinity: a model with non-finite weights would otherwise answer "cat nan",
// or score a plausible 50%. Reads the outputs on the host (a sync).
void check_finite_outputs(const Tensor& outputs, const std::string& model_path,
                          const std::function<std::string(int64_t row)>& image_of);

// "[bird, cat, dog]", for messages that name a set of classes.
std::string class_list(const std::vector<std::string>& classes);

// The logits of a model for `classes` class folders: 1 for two (the seed's sigmoid head, p the
// probability of the second class), K for K >= 3 (softmax over the classes).
int64_t outputs_for_classes(size_t classes);
// Refuses a model file (`source`) whose preprocessing names fewer than 2 classes: no model
// loom-catdog trains has one.
void check_model_classes(const io::Preprocessing& p, const std::string& source);
// Binary cross-entropy for a one-logit head, cross-entropy for K class logits; with
// label_smoothing s, towards smoothed targets (train::binary_cross_entropy_loss).
train::LossFn loss_for_outputs(int64_t outputs, double label_smoothing = 0.0);

}  // namespace loom::catdog
