#include "loom/tensor/storage.h"

#include <algorithm>
#include <cstdlib>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "loom/tensor/cuda/caching_allocator.h"
#include "loom/tensor/error.h"

namespace loom {
namespace {

// 64-byte alignment suits AVX-512 loads and keeps Eigen's aligned maps valid.
constexpr size_t kCpuAlignment = 64;

// glibc returns a freed block above its (adaptive) mmap threshold to the OS and trims the
// heap's free top above twice that, so a training step, which frees and reallocates the same
// activations every step, page-faults them in anew (about 1000 zero-filled pages per step of
// the seed CNN on the CPU). Serve blocks up to 32 MiB (glibc's ceiling) from the heap and trim
// only above 256 MiB of free top: the memory stays with the process for the next step.
void keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)done;
#endif
}

void* cpu_allocate(size_t nbytes) {
  keep_freed_memory();
  const size_t rounded =
      (std::max<size_t>(nbytes, 1) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
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

Storage Storage::wrap(void* data, size_t nbytes, Device device,
                      std::function<void(void*)> deleter) {
  Storage storage;
  storage.impl_ = std::make_shared<Impl>();
  storage.impl_->data = data;
  storage.impl_->nbytes = nbytes;
  storage.impl_->device = device;
  storage.impl_->deleter = std::move(deleter);
  return storage;
}

}  // namespace loom
