// copy_all: the CPU loop, and the dispatch to the CUDA kernel.
#include "loom/distributed/flat_copy.h"

#include <cstring>

namespace loom::dist {

void copy_all(const std::vector<FlatCopy>& copies, Device device) {
  if (copies.empty()) return;
  if (device.is_cuda()) return copy_all_cuda(copies, device.index);
  for (const FlatCopy& c : copies) std::memcpy(c.dst, c.src, c.bytes);
}

}  // namespace loom::dist
