// warm_up: the CUDA part lives in cuda/warm_up.cpp.
#include "loom/ops/warm_up.h"

#include "loom/ops/dispatch.h"
#include "loom/tensor/error.h"

namespace loom {

namespace detail {
void cuda_warm_up(int device);
}

void warm_up(const Device& device) {
  if (!device.is_cuda()) return;
  try {
    LOOM_CUDA_DISPATCH("warm_up", detail::cuda_warm_up(device.index));
  } catch (const Error& e) {
    LOOM_FAIL("warm_up(", device.str(), "): ", e.what());
  }
}

}  // namespace loom
