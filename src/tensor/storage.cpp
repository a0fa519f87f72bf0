#include "tensor/storage.h"

#include <algorithm>
#include <cstdlib>

#include "tensor/cuda/caching_allocator.h"
#include "tensor/error.h"

namespace loom {
namespace {

// 64-byte alignment suits AVX-512 loads and keeps Eigen's aligned maps valid.
constexpr size_t kCpuAlignment = 64;

void* cpu_allocate(size_t nbytes) {
  const size_t rounded = (std::max<size_t>(nbytes, 1) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* data = std::aligned_alloc(kCpuAlignment, rounded);
  LOOM_CHECK(data != nullptr, "out of CPU memory: could not allocate ", nbytes, " bytes");
  return data;
}

}  // namespace

Storage Storage::allocate(size_t nbytes, Device device) {
  Storage storage;
  storage.impl_ = std::make_shared<Impl>();
  storage.impl_->nbytes = nbytes;
  storage.impl_->device = device;
  if (device.is_cpu()) {
    storage.impl_->data = cpu_allocate(nbytes);
    storage.impl_->deleter = [](void* p) { std::free(p); };
  } else {
    storage.impl_->data = cuda::allocate(nbytes, device.index);
    storage.impl_->deleter = [](void* p) { cuda::deallocate(p); };
  }
  return storage;
}

Storage Storage::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter) {
  Storage storage;
  storage.impl_ = std::make_shared<Impl>();
  storage.impl_->data = data;
  storage.impl_->nbytes = nbytes;
  storage.impl_->device = device;
  storage.impl_->deleter = std::move(deleter);
  return storage;
}

}  // namespace loom
