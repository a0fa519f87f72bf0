// The owning backend descriptor of cudnn_graph.h.
#include "loom/ops/cuda/cudnn_graph.h"

#include <algorithm>

namespace loom::cuda {

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t raw = nullptr;
  LOOM_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &raw));
  desc_ = std::shared_ptr<void>(raw, [](void* d) { cudnnBackendDestroyDescriptor(d); });
}

BackendDescriptor& BackendDescriptor::set(cudnnBackendAttributeName_t name,
                                          cudnnBackendAttributeType_t type, int64_t count,
                                          const void* values) {
  const cudnnStatus_t status = cudnnBackendSetAttribute(get(), name, type, count, values);
  LOOM_CHECK(status == CUDNN_STATUS_SUCCESS, "cuDNN graph API: setting attribute ",
             static_cast<int>(name), " failed: ", cudnnGetErrorString(status));
  return *this;
}

BackendDescriptor& BackendDescriptor::set_int64(cudnnBackendAttributeName_t name,
                                                const std::vector<int64_t>& values) {
  return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
}

BackendDescriptor& BackendDescriptor::set_descriptor(cudnnBackendAttributeName_t name,
                                                     const BackendDescriptor& value) {
  cudnnBackendDescriptor_t raw = value.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  kept_.push_back(value);
  return *this;
}

void BackendDescriptor::finalize() { LOOM_CUDNN_CHECK(cudnnBackendFinalize(get())); }

cudnnStatus_t BackendDescriptor::try_finalize() { return cudnnBackendFinalize(get()); }

int64_t BackendDescriptor::count(cudnnBackendAttributeName_t name,
                                 cudnnBackendAttributeType_t type) const {
  return get(name, type, 0, nullptr);
}

int64_t BackendDescriptor::get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                               int64_t count, void* values) const {
  int64_t returned = 0;
  LOOM_CUDNN_CHECK(cudnnBackendGetAttribute(get(), name, type, count, &returned, values));
  return returned;
}

int64_t BackendDescriptor::get_int64(cudnnBackendAttributeName_t name) const {
  int64_t value = 0;
  get(name, CUDNN_TYPE_INT64, 1, &value);
  return value;
}

std::vector<BackendDescriptor> get_descriptors(const BackendDescriptor& owner,
                                               cudnnBackendAttributeName_t name,
                                               cudnnBackendDescriptorType_t type, int64_t count) {
  std::vector<BackendDescriptor> out;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    out.emplace_back(type);
    raw.push_back(out.back().get());
  }
  const int64_t returned = owner.get(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, raw.data());
  out.erase(out.begin() + std::min(returned, count), out.end());
  return out;
}

}  // namespace loom::cuda
