// Rebuilding modules from their JSON spec ({"type": ..., "config": {...}}, see
// Module::spec_json()). Types are looked up in a name -> factory map that one explicit function
// fills with loom's own modules (no static self-registration); users add theirs with
// register_module_type(). Specs come from downloaded files, so they are parsed with limits
// (nn/untrusted_json.h) and their state can be predicted, and checked, before anything is built.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nn/module.h"

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
  std::vector<StateEntry> entries;       // the state of every layer whose type has a StateFunction
  std::vector<std::string> unpredicted;  // the layers (dotted paths; "" for the whole) of types without
};

// The state_layout() of the module from_spec(spec_json) would build, computed from the spec
// alone, so a file's tensors can be checked against its spec before a byte is allocated. The
// state under a layer of a type registered without a StateFunction is left to that type's
// factory (see `unpredicted`). Throws as from_spec.
PredictedState spec_state(const std::string& spec_json);

// Makes a user-defined type known to from_spec(); replaces an existing factory of that name.
// Without `state`, spec_state() cannot predict the state of layers of the type.
void register_module_type(const std::string& type_name, ModuleFactory factory, StateFunction state = nullptr);
// The type names from_spec() accepts, sorted.
std::vector<std::string> registered_module_types();

}  // namespace loom::nn
