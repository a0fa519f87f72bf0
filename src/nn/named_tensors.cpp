// NamedTensors: ordered storage plus a name index.
#include "loom/nn/named_tensors.h"

namespace loom::nn {

NamedTensors::NamedTensors(std::initializer_list<Item> items) {
  for (const Item& item : items) insert(item.first, item.second);
}

void NamedTensors::insert(const std::string& name, const Tensor& tensor) {
  LOOM_CHECK(!contains(name), "NamedTensors: duplicate name \"", name, "\"");
  index_.emplace(name, items_.size());
  items_.emplace_back(name, tensor);
}

const Tensor& NamedTensors::at(const std::string& name) const {
  const auto it = index_.find(name);
  LOOM_CHECK(it != index_.end(), "NamedTensors: no tensor named \"", name, "\"");
  return items_[it->second].second;
}

Tensor& NamedTensors::at(const std::string& name) {
  const auto it = index_.find(name);
  LOOM_CHECK(it != index_.end(), "NamedTensors: no tensor named \"", name, "\"");
  return items_[it->second].second;
}

std::vector<std::string> NamedTensors::keys() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const Item& item : items_) out.push_back(item.first);
  return out;
}

std::vector<Tensor> NamedTensors::values() const {
  std::vector<Tensor> out;
  out.reserve(items_.size());
  for (const Item& item : items_) out.push_back(item.second);
  return out;
}

}  // namespace loom::nn
