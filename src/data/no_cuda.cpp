// The data pipeline's CUDA entry points in a CPU-only build: no pinned memory (HostBuffer falls
// back to ordinary memory) and a clear error if a loader is asked to deliver to a GPU.
#include "loom/data/host_buffer.h"
#include "loom/data/transfer.h"
#include "loom/tensor/primitives.h"

namespace loom::data {

namespace detail {
void* pinned_alloc(size_t, int) { return nullptr; }
void pinned_free(void*) {}
}  // namespace detail

struct DeviceTransfer::Impl {};

DeviceTransfer::DeviceTransfer(int, int) {
  loom::detail::throw_no_cuda("DataLoader to a CUDA device");
}
DeviceTransfer::~DeviceTransfer() = default;
void DeviceTransfer::upload(int, const std::vector<std::pair<const void*, Tensor>>&) {
  loom::detail::throw_no_cuda("DataLoader upload");
}
void DeviceTransfer::wait_host_free(int) {}

}  // namespace loom::data
