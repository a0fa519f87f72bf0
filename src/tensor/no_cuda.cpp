// The CUDA entry points of a CPU-only build: no devices, and a clear error wherever a CUDA
// tensor or stream is asked for (never a silent fallback to the CPU).
#include "loom/tensor/build_info.h"
#include "loom/tensor/cuda/caching_allocator.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/device.h"
#include "loom/tensor/primitives.h"

namespace loom {

bool built_with_cuda() { return false; }
std::string cuda_libraries_built_with() { return ""; }
int cuda_device_count() { return 0; }

namespace detail {
void cuda_fill(const Tensor&, double) { throw_no_cuda("fill_"); }
void cuda_copy(const Tensor&, const Tensor&) { throw_no_cuda("copy_"); }
void cuda_accumulate(const Tensor&, const Tensor&) { throw_no_cuda("accumulate"); }
void cuda_fill_random(const Tensor&, const RandomParams&) { throw_no_cuda("random"); }
void cuda_memcpy(void*, Device, const void*, Device, size_t) { throw_no_cuda("copy_"); }
void cuda_memcpy_on_stream(void*, Device, const void*, Device, size_t, cuda::StreamHandle) {
  throw_no_cuda("copy_");
}
}  // namespace detail

namespace cuda {
void* allocate(size_t, int) { detail::throw_no_cuda("allocate"); }
void deallocate(void*) {}
AllocatorStats allocator_stats(int) { return {}; }
void reset_peak_stats(int) {}
void empty_cache() {}
PoolId create_pool(int) { detail::throw_no_cuda("create_pool"); }
void use_pool(int, PoolId) { detail::throw_no_cuda("use_pool"); }
void release_pool(int, PoolId, StreamHandle) {}
Graph::Graph(int) : device_(0) { detail::throw_no_cuda("Graph"); }
Graph::~Graph() = default;
void Graph::capture_begin() { detail::throw_no_cuda("Graph::capture_begin"); }
void Graph::capture_end() { detail::throw_no_cuda("Graph::capture_end"); }
void Graph::capture_abort() noexcept {}
void Graph::refresh(const std::function<void()>&) { detail::throw_no_cuda("Graph::refresh"); }
void Graph::replay() { detail::throw_no_cuda("Graph::replay"); }
void Graph::keep_alive(std::shared_ptr<void>) {}
void keep_alive_while_captured(int, std::shared_ptr<void>) {}
bool capturing(int) { return false; }
void check_not_capturing(int, const char*, const char*) {}
ReplayConstant replay_constant(int, const void*, size_t) { return {nullptr, true}; }
int current_device() { detail::throw_no_cuda("current_device"); }
void set_device(int) { detail::throw_no_cuda("set_device"); }
StreamHandle current_stream(int) { detail::throw_no_cuda("current_stream"); }
StreamHandle default_stream(int) { detail::throw_no_cuda("default_stream"); }
void set_current_stream(int, StreamHandle) { detail::throw_no_cuda("set_current_stream"); }
StreamHandle create_stream(int) { detail::throw_no_cuda("create_stream"); }
void destroy_stream(int, StreamHandle) { detail::throw_no_cuda("destroy_stream"); }
bool enable_peer_access(int, int) { detail::throw_no_cuda("enable_peer_access"); }
void synchronize(int) { detail::throw_no_cuda("synchronize"); }
void synchronize_stream(StreamHandle) { detail::throw_no_cuda("synchronize_stream"); }
void profiler_start() { detail::throw_no_cuda("profiler_start"); }
void profiler_stop() { detail::throw_no_cuda("profiler_stop"); }
Event::Event(int, bool) : device_(0) { detail::throw_no_cuda("Event"); }
Event::~Event() = default;
void Event::record(StreamHandle) { detail::throw_no_cuda("Event::record"); }
void Event::wait(StreamHandle) const { detail::throw_no_cuda("Event::wait"); }
void Event::synchronize() const { detail::throw_no_cuda("Event::synchronize"); }
bool Event::query() const { detail::throw_no_cuda("Event::query"); }
float Event::elapsed_ms(const Event&, const Event&) { detail::throw_no_cuda("Event::elapsed_ms"); }
DeviceGuard::DeviceGuard(int) : previous_(0) { detail::throw_no_cuda("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;
StreamGuard::StreamGuard(int, StreamHandle) : device_(0), previous_(nullptr) {
  detail::throw_no_cuda("StreamGuard");
}
StreamGuard::~StreamGuard() = default;
}  // namespace cuda

}  // namespace loom
