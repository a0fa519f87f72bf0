// Host-to-device uploads for the DataLoader: copies from pinned memory on a side stream, with
// events so that (1) the copy waits for the compute stream's earlier use of the destination
// memory, (2) the compute stream waits for the copy (no host synchronisation), and (3) a worker
// waits before it overwrites a host buffer the copy may still be reading.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::data {

class DeviceTransfer {
 public:
  // `slots` host buffers take turns; each has its own "copy finished" event.
  DeviceTransfer(int device, int slots);
  ~DeviceTransfer();
  DeviceTransfer(const DeviceTransfer&) = delete;
  DeviceTransfer& operator=(const DeviceTransfer&) = delete;

  // Copies each (host pointer, contiguous CUDA tensor) pair, nbytes of the tensor, on the side
  // stream; the calling thread's current stream of the device waits for the copies.
  void upload(int slot, const std::vector<std::pair<const void*, Tensor>>& copies);
  // Blocks until the last upload from `slot` has finished reading its host memory.
  void wait_host_free(int slot);

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace loom::data
