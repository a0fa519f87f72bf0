// The zoo's PyTorch name maps and the import of a state_dict through them.
#include "loom/io/torch_import.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "loom/nn/models/cnn.h"
#include "loom/nn/models/resnet.h"
#include "loom/tensor/error.h"

namespace loom::io {

namespace {

std::shared_ptr<nn::Sequential> build_zoo_model(const std::string& model, int64_t num_outputs) {
  if (model == "seed_cnn") return nn::seed_cnn(num_outputs);
  if (model == "classic_cnn") return nn::classic_cnn(num_outputs);
  if (model == "resnet18") return nn::resnet18(num_outputs);
  LOOM_FAIL("PyTorch import: expected seed_cnn, classic_cnn or resnet18, got \"", model, "\"");
}

// "a, b, c and 4 more": error messages name a few tensors, not a whole ResNet.
std::string some_names(const std::vector<std::string>& names) {
  std::ostringstream out;
  const size_t shown = std::min<size_t>(names.size(), 6);
  for (size_t i = 0; i < shown; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > shown) out << " and " << names.size() - shown << " more";
  return out.str();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// loom's zoo was named after PyTorch's modules on purpose (nn.Sequential's indices; torchvision's
// attribute names for ResNet), so every map is the identity; what differs between the two is
// only that PyTorch may leave num_batches_tracked out (torch.jit and some exporters drop it).
std::vector<TorchName> name_map_of(const nn::Module& model) {
  std::vector<TorchName> map;
  for (const nn::StateEntry& e : model.state_layout()) {
    map.push_back({e.name, e.name, ends_with(e.name, "num_batches_tracked")});
  }
  return map;
}

void check_importable(const std::string& model) {
  const auto& models = torch_importable_models();
  LOOM_CHECK(std::find(models.begin(), models.end(), model) != models.end(),
             "PyTorch import: expected seed_cnn, classic_cnn or resnet18, got \"", model, "\"");
}

}  // namespace

const std::vector<std::string>& torch_importable_models() {
  static const std::vector<std::string> models{"seed_cnn", "classic_cnn", "resnet18"};
  return models;
}

std::vector<TorchName> torch_name_map(const std::string& model, int64_t num_outputs) {
  return name_map_of(*build_zoo_model(model, num_outputs));
}

std::string torch_head_name(const std::string& model) {
  if (model == "seed_cnn") return "6.weight";
  if (model == "classic_cnn") return "9.weight";
  if (model == "resnet18") return "fc.weight";
  check_importable(model);  // throws naming the model
  return "";
}

nn::NamedTensors strip_torch_wrappers(const nn::NamedTensors& torch_state) {
  static const std::string prefixes[] = {"module.", "_orig_mod."};
  nn::NamedTensors out;
  for (const auto& [name, tensor] : torch_state) {
    std::string stripped = name;
    for (bool again = true; again;) {
      again = false;
      for (const std::string& p : prefixes) {
        if (stripped.rfind(p, 0) == 0 && stripped.size() > p.size()) {
          stripped = stripped.substr(p.size());
          again = true;
        }
      }
    }
    LOOM_CHECK(!out.contains(stripped), "PyTorch import: \"", name,
               "\" and another tensor are both \"", stripped,
               "\" without their wrapper prefix (module., _orig_mod.)");
    out.insert(stripped, tensor);
  }
  return out;
}

TorchImport import_torch_state_dict(const std::string& model, const nn::NamedTensors& torch_state) {
  check_importable(model);  // an unknown model is named before the file's contents
  const nn::NamedTensors state = strip_torch_wrappers(torch_state);
  const std::string head = torch_head_name(model);
  LOOM_CHECK(state.contains(head), "PyTorch import: no \"", head,
             "\" (the head Linear's weight of a ", model, ") among the file's ", state.size(),
             " tensors: ", some_names(state.keys()));
  const Shape head_shape = state.at(head).shape();
  LOOM_CHECK(head_shape.size() == 2 && head_shape[0] >= 1, "PyTorch import: ", head,
             " should be [outputs, features], got ", shape_str(head_shape));
  if (model == "resnet18" && state.contains("conv1.weight")) {
    const Shape stem = state.at("conv1.weight").shape();
    LOOM_CHECK(!(stem.size() == 4 && stem[2] == 7 && stem[3] == 7),
               "PyTorch import: conv1.weight is ", shape_str(stem),
               ", torchvision's ImageNet stem (7x7 stride 2, then a max pool); loom's resnet18 "
               "has the small-image stem: in PyTorch set model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, "
               "bias=False) and model.maxpool = nn.Identity() before training");
  }

  TorchImport result;
  result.num_outputs = head_shape[0];
  result.model = build_zoo_model(model, result.num_outputs);
  nn::NamedTensors mapped;
  std::vector<std::string> missing, unexpected;
  std::unordered_set<std::string> known;
  for (const TorchName& n : name_map_of(*result.model)) {
    known.insert(n.torch);
    if (state.contains(n.torch)) {
      mapped.insert(n.loom, state.at(n.torch));
    } else if (n.optional) {
      result.notes.push_back(n.torch + " absent: left at 0");
    } else {
      missing.push_back(n.torch);
    }
  }
  for (const std::string& name : state.keys()) {
    if (known.count(name) == 0) unexpected.push_back(name);
  }
  std::ostringstream problems;
  if (!missing.empty()) problems << "\n  missing: " << some_names(missing);
  if (!unexpected.empty()) problems << "\n  unexpected: " << some_names(unexpected);
  LOOM_CHECK(problems.str().empty(), "PyTorch import: the tensors are not a ", model, "'s (with ",
             result.num_outputs, " outputs, from ", head, ")", problems.str());
  result.model->load_state_dict(mapped, /*strict=*/false);  // still refuses a shape mismatch
  result.model->eval();
  return result;
}

}  // namespace loom::io
