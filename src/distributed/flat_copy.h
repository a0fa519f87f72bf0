// Many contiguous copies in one launch: DistributedDataParallel moves the gradients backward
// produced into their bucket's slice of the arena with one kernel per bucket, not one per
// parameter.
#pragma once

#include <cstddef>
#include <vector>

#include "loom/tensor/device.h"

namespace loom::dist {

struct FlatCopy {
  const void* src;
  void* dst;
  size_t bytes;
};

// Every copy, on the CPU or on the current stream of `device` (the memory must be there).
void copy_all(const std::vector<FlatCopy>& copies, Device device);
void copy_all_cuda(const std::vector<FlatCopy>& copies, int device);

}  // namespace loom::dist
