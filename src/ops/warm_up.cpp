// warm_up: the CUDA part lives in cuda/warm_up.cpp.
#include "loom/ops/warm_up.h"

#include "loom/ops/dispatch.h"

namespace loom {

namespace detail {
void cuda_warm_up(int device);
}

void warm_up(const Device& device) {
  if (!device.is_cuda()) return;
  LOOM_CUDA_DISPATCH("warm_up", detail::cuda_warm_up(device.index));
}

}  // namespace loom
