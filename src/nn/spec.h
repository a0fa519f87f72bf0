// Rebuilding modules from their JSON spec ({"type": ..., "config": {...}}, see
// Module::spec_json()). Types are looked up in a name -> factory map that one explicit function
// fills with loom's own modules (no static self-registration); users add theirs with
// register_module_type(). Specs come from downloaded files, so they are parsed with limits
// (nn/untrusted_json.h), and their state and the inputs they take can be predicted, and checked,
// before anything is built.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/nn/module.h"
#include "loom/nn/shape_rule.h"

namespace loom::nn {

// Builds a module from the config JSON its config_json() produced.
using ModuleFactory = std::function<ModulePtr(const std::string& config_json)>;
// The state_layout() of the module a factory would build from this config, computed from the
// config alone (nothing allocated).
using StateFunction = std::function<std::vector<StateEntry>(const std::string& config_json)>;

// Builds the module a spec describes (fresh parameters: load a state_dict for the weights).
// Throws loom::Error on malformed JSON (nested deeper than kMaxJsonDepth, a key repeated in an
// object, a size that is not an integer in range) or an unknown type, naming the known types.
ModulePtr from_spec(const std::string& spec_json);

// What spec_state() tells of a module before it is built.
struct PredictedState {
  std::vector<StateEntry> entries;  // the state of every layer whose type has a StateFunction
  std::vector<std::string>
      unpredicted;  // the layers (dotted paths; "" for the whole) of types without
};

// The state_layout() of the module from_spec(spec_json) would build, computed from the spec
// alone, so a file's tensors can be checked against its spec before a byte is allocated. The
// state under a layer of a type registered without a StateFunction is left to that type's
// factory (see `unpredicted`). Throws as from_spec.
PredictedState spec_state(const std::string& spec_json);

// The inputs the module from_spec(spec_json) would build takes, worked out from the spec alone:
// each layer's shape rule (nn/shape_rule.h; a Sequential is its layers in turn), made once from
// the spec and then asked about as many shapes as wanted. A model file's preprocessing is checked
// with it before any image is decoded at the size it asks for.
//
// A model ending in Flatten -> Linear(in_features) pins its input: only the sizes whose
// flattened features are exactly in_features fit (seed_cnn: 60x60 to 65x65, its stride-3 kernel
// and pooling round down). A fully convolutional model with global pooling (resnet18) takes any
// size from its smallest up, and a layer of a type without a shape rule (a user's type
// registered without one), or a Flatten or Linear reaching across the batch dimension, leaves
// the answer Unknown: there only the caller's own limits bound the input.
class SpecShapes {
 public:
  // Throws as from_spec on a malformed spec or config, or an unknown type.
  explicit SpecShapes(const std::string& spec_json);

  // What the layers make of one example of shape `example` (an image: [C, H, W]; no batch
  // dimension): Fits with the output shape, or the first layer that does not take what it gets,
  // why, and whether a larger or smaller input would do (InputFit::Verdict). Every layer's
  // input, the example too, must be within kMaxExampleElements (else TooLarge). Never throws.
  InputFit fit(const Shape& example) const;

  // The sides s of the square images [channels, s, s], 1 <= s <= max_side, that fit: an
  // interval, since every rule's output sizes grow with its input's and each limit is a lower
  // or an upper bound, found by bisection in O(layers * log(max_side)). Nothing when none fits
  // or the spec cannot say (fit() is Unknown there). A largest side of max_side means the size
  // is not pinned within the range.
  struct Sides {
    int64_t smallest, largest;
  };
  std::optional<Sides> square_sides(int64_t channels, int64_t max_side) const;

 private:
  std::vector<std::pair<std::string, ShapeRule>> layers_;  // (dotted path, rule), in order
};

// Makes a user-defined type known to from_spec(); replaces an existing factory of that name.
// Without `state`, spec_state() cannot predict the state of layers of the type; without
// `shape`, SpecShapes cannot say which inputs they take (Unknown).
void register_module_type(const std::string& type_name, ModuleFactory factory,
                          StateFunction state = nullptr, ShapeRuleFactory shape = nullptr);
// The type names from_spec() accepts, sorted.
std::vector<std::string> registered_module_types();

}  // namespace loom::nn
