// cuDNN's graph (backend) API as loom uses it: an owning handle to one backend descriptor with
// typed attribute setters and getters. Include only from CUDA-enabled sources.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/ops/cuda/cudnn_handle.h"

namespace loom::cuda {

// A backend descriptor, destroyed with its last copy. A descriptor given to another as an
// attribute (a tensor to an operation, an engine configuration to a plan) is kept alive by
// it, so nothing cuDNN may still refer to is destroyed early.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  cudnnBackendDescriptor_t get() const { return desc_.get(); }

  // Setters throw a loom::Error naming the attribute when cuDNN refuses the value.
  BackendDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t count, const void* values);
  BackendDescriptor& set_int64(cudnnBackendAttributeName_t name,
                               const std::vector<int64_t>& values);
  BackendDescriptor& set_descriptor(cudnnBackendAttributeName_t name,
                                    const BackendDescriptor& value);
  // Keeps `other` alive as long as this descriptor (what cuDNN filled in from it may refer to it).
  void keep_alive(const BackendDescriptor& other) { kept_.push_back(other); }

  void finalize();
  // Finalizes, returning cuDNN's status instead of throwing: an engine configuration that
  // does not support its graph is refused here, which a search expects.
  cudnnStatus_t try_finalize();

  // How many values the attribute holds, and the first `count` of them into `values`.
  int64_t count(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type) const;
  int64_t get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
              void* values) const;
  int64_t get_int64(cudnnBackendAttributeName_t name) const;

 private:
  std::shared_ptr<void> desc_;
  std::vector<BackendDescriptor> kept_;
};

// `count` fresh descriptors of `type` filled by cuDNN from a descriptor-valued attribute of
// `owner` (engine configurations from heuristics, the engine of a configuration).
std::vector<BackendDescriptor> get_descriptors(const BackendDescriptor& owner,
                                               cudnnBackendAttributeName_t name,
                                               cudnnBackendDescriptorType_t type, int64_t count);

}  // namespace loom::cuda
