// Host memory for the loader's staging buffers: page-locked (cudaHostAlloc) when asked for and
// CUDA is usable, so host-to-device copies run asynchronously at full speed; ordinary memory
// otherwise. A buffer grows when needed and is reused across batches.
#pragma once

#include <cstddef>

namespace loom::data {

class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  // Makes room for nbytes (contents are not kept when it grows). Pinned memory is allocated
  // from cuda:`device`, which becomes the calling thread's device (a loader's worker serves
  // one device; on another one, CUDA would make this process a context there).
  void reserve(size_t nbytes, bool pinned, int device = 0);
  void* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  bool pinned() const { return pinned_; }

 private:
  void release();
  void* data_ = nullptr;
  size_t capacity_ = 0;
  bool pinned_ = false;
};

namespace detail {
// Page-locked memory from cuda:`device` (made the thread's current device), or nullptr when this
// build or machine has no CUDA (the caller falls back).
void* pinned_alloc(size_t nbytes, int device);
void pinned_free(void* ptr);
}  // namespace detail

}  // namespace loom::data
