// Storage: a reference-counted block of memory on one device. Tensors are views into a storage;
// the memory goes back to its allocator (the CPU heap or the CUDA caching allocator) when the
// last view is gone.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "loom/tensor/device.h"

namespace loom {

class Storage {
 public:
  Storage() = default;
  // Fresh memory from the device's allocator (the current stream's pool on CUDA).
  static Storage allocate(size_t nbytes, Device device);
  // Wraps memory loom does not own; `deleter` (may be empty) runs when the last view is gone.
  static Storage wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);

  void* data() const { return impl_ ? impl_->data : nullptr; }
  size_t nbytes() const { return impl_ ? impl_->nbytes : 0; }
  Device device() const { return impl_ ? impl_->device : Device(); }
  bool defined() const { return impl_ != nullptr; }
  long use_count() const { return impl_.use_count(); }
  bool is_same(const Storage& other) const { return impl_ == other.impl_; }

 private:
  struct Impl {
    void* data = nullptr;
    size_t nbytes = 0;
    Device device;
    std::function<void(void*)> deleter;
    ~Impl() {
      if (deleter) deleter(data);
    }
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace loom
