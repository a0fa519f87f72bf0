// HostBuffer: growth and the fallback from pinned to ordinary memory.
#include "loom/data/host_buffer.h"

#include <cstdlib>
#include <new>

namespace loom::data {

HostBuffer::~HostBuffer() { release(); }

void HostBuffer::release() {
  if (pinned_) {
    detail::pinned_free(data_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  capacity_ = 0;
  pinned_ = false;
}

void HostBuffer::reserve(size_t nbytes, bool pinned, int device) {
  if (nbytes <= capacity_ && pinned == pinned_) return;
  release();
  if (nbytes == 0) return;
  if (pinned) {
    data_ = detail::pinned_alloc(nbytes, device);
    pinned_ = data_ != nullptr;
  }
  if (data_ == nullptr) {
    data_ = std::malloc(nbytes);
    if (data_ == nullptr) throw std::bad_alloc();
  }
  capacity_ = nbytes;
}

}  // namespace loom::data
