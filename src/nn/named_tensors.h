// NamedTensors: an insertion-ordered name -> Tensor map. named_parameters(), named_buffers() and
// state_dict() return one, so names come out in registration order ("0.weight", "0.bias", ...).
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::nn {

class NamedTensors {
 public:
  using Item = std::pair<std::string, Tensor>;

  NamedTensors() = default;
  NamedTensors(std::initializer_list<Item> items);

  // Appends; throws loom::Error when the name is already present.
  void insert(const std::string& name, const Tensor& tensor);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Throws loom::Error naming the key when absent.
  const Tensor& at(const std::string& name) const;
  Tensor& at(const std::string& name);

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  std::vector<Tensor> values() const;

  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace loom::nn
