// Rebuilding modules from their JSON spec ({"type": ..., "config": {...}}, see
// Module::spec_json()). Types are looked up in a name -> factory map that one explicit function
// fills with loom's own modules (no static self-registration); users add theirs with
// register_module_type().
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace loom::nn {

// Builds a module from the config JSON its config_json() produced.
using ModuleFactory = std::function<ModulePtr(const std::string& config_json)>;

// Builds the module a spec describes (fresh parameters: load a state_dict for the weights).
// Throws loom::Error on malformed JSON or an unknown type, naming the known types.
ModulePtr from_spec(const std::string& spec_json);

// Makes a user-defined type known to from_spec(); replaces an existing factory of that name.
void register_module_type(const std::string& type_name, ModuleFactory factory);
// The type names from_spec() accepts, sorted.
std::vector<std::string> registered_module_types();

}  // namespace loom::nn
