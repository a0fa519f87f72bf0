// Shape rules: what a layer makes of the shape of one input example, worked out from its config
// alone (nothing built, nothing allocated), so that a model file's preprocessing can be checked
// against its own spec (nn::SpecShapes in nn/spec.h). Shapes here leave out the batch dimension:
// an image is [C, H, W] where the layer sees [N, C, H, W].
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "loom/tensor/shape.h"

namespace loom::nn {

// The most elements one example may have at any layer: 2^31 float32 values are 8 GiB a
// sample, far past any model loom runs, and with every size below it the rules' arithmetic
// stays inside int64.
inline constexpr int64_t kMaxExampleElements = int64_t{1} << 31;

// What a layer, or a whole spec, makes of one example's shape.
struct InputFit {
  enum class Verdict {
    Fits,      // taken: `output` is the example's shape after it
    TooSmall,  // a larger input is needed: a kernel wider than the padded plane, fewer features
               // than a Linear takes
    TooLarge,  // a smaller input is needed: more features than a Linear takes, more than
               // kMaxExampleElements
    Refused,   // refused at any size: the channels, the number of dimensions
    Unknown,   // the spec cannot say: a type without a shape rule, a layer reaching across the
               // batch dimension
  };
  Verdict verdict = Verdict::Fits;
  Shape output;        // Fits
  std::string layer;   // otherwise, from SpecShapes: the layer's dotted path ("" the whole), cut
                       // to an excerpt (nn::excerpt: it is untrusted text)
  std::string reason;  // otherwise: what the layer takes and what it got
};

// A layer's rule, made once from its config (so a spec is parsed once however many shapes are
// asked about).
using ShapeRule = std::function<InputFit(const Shape& example)>;
// Makes the rule of a type from one config: throws loom::Error on a malformed config.
using ShapeRuleFactory = std::function<ShapeRule(const std::string& config_json)>;

inline InputFit fits(Shape output) { return {InputFit::Verdict::Fits, std::move(output), "", ""}; }
inline InputFit not_fit(InputFit::Verdict verdict, std::string reason) {
  return {verdict, {}, "", std::move(reason)};
}
// For a size a layer must match exactly: TooSmall below it, TooLarge above.
inline InputFit size_mismatch(int64_t got, int64_t wanted, std::string reason) {
  return not_fit(got < wanted ? InputFit::Verdict::TooSmall : InputFit::Verdict::TooLarge,
                 std::move(reason));
}
// Whether `example` is an image [C, H, W] of `channels` channels; when not, not_an_image says
// so for `layer` ("Conv2d(3 -> 32) takes 3-channel images [3, H, W], gets [1, 64, 64]").
inline bool is_image_of(const Shape& example, int64_t channels) {
  return example.size() == 3 && example[0] == channels;
}
inline InputFit not_an_image(const Shape& example, int64_t channels, const std::string& layer) {
  return not_fit(InputFit::Verdict::Refused, layer + " takes " + std::to_string(channels) +
                                                 "-channel images [" + std::to_string(channels) +
                                                 ", H, W], gets " + shape_str(example));
}

}  // namespace loom::nn
