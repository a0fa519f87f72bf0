// CUDA graph capture and replay, the capture's private memory pool, and replay constants (see
// graph.h).
#include <cuda_runtime.h>

#include <cstring>

#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/device.h"

namespace loom::cuda {

namespace {

constexpr int kMaxDevices = 64;
// Room for a graph's replay constants: an Adam update's are 72 bytes per fused launch group.
constexpr size_t kConstantBytes = 16384;
constexpr size_t kConstantAlign = 16;
// Replay constants travel to the device as a kernel's arguments (copied when the kernel is
// launched, so the host buffer is free again at once and nothing waits), at most this many
// bytes a launch: below the 4 KiB classic limit of kernel parameters.
constexpr size_t kUploadChunk = 3968;

thread_local Graph* capturing_graph[kMaxDevices] = {};
thread_local Graph* refreshing_graph[kMaxDevices] = {};
// The stream a capture replaced as current, restored when it ends.
thread_local StreamHandle stream_before_capture[kMaxDevices] = {};

struct UploadChunk {
  unsigned char bytes[kUploadChunk];
};

__global__ void store_constants(UploadChunk chunk, unsigned char* dst, size_t n) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = chunk.bytes[i];
}

size_t align_up(size_t n) { return (n + kConstantAlign - 1) / kConstantAlign * kConstantAlign; }

void check_device_index(int device) {
  LOOM_CHECK(device >= 0 && device < kMaxDevices && device < cuda_device_count(),
             "CUDA graph: device ", device, " does not exist (", cuda_device_count(), " visible)");
}

}  // namespace

struct ReplayConstantSink {
  static ReplayConstant put(Graph& g, const void* bytes, size_t size, bool refreshing) {
    const size_t offset = align_up(refreshing ? g.refresh_cursor_ : g.constants_.size());
    if (refreshing) {
      LOOM_CHECK(offset + size <= g.constants_.size(),
                 "CUDA graph refresh: the host code stores more replay "
                 "constants than the capture did (",
                 offset + size, " bytes, captured ", g.constants_.size(),
                 "); it must make the calls of the capture, in the same order");
      std::memcpy(g.constants_.data() + offset, bytes, size);
      g.refresh_cursor_ = offset + size;
    } else {
      LOOM_CHECK(offset + size <= kConstantBytes, "CUDA graph capture: more than ", kConstantBytes,
                 " bytes of replay constants (optimizer updates) in one graph");
      g.constants_.resize(offset + size);
      std::memcpy(g.constants_.data() + offset, bytes, size);
    }
    return {static_cast<unsigned char*>(g.constants_device_) + offset, !refreshing};
  }
};

Graph::Graph(int device) : device_(device) { check_device_index(device); }

Graph::~Graph() { reset(); }

void Graph::reset() noexcept {
  capture_abort();
  // The graph's memory may still be in use by a replay in flight.
  if (replay_stream_ != nullptr) cudaStreamSynchronize(replay_stream_);
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  num_nodes_ = 0;
  if (pool_ != 0)
    release_pool(device_, pool_,
                 replay_stream_ != nullptr ? replay_stream_ : default_stream(device_));
  pool_ = 0;
  if (constants_device_ != nullptr) deallocate(constants_device_);
  constants_device_ = nullptr;
  kept_alive_.clear();  // last: a communicator must outlive every graph that captured it
  constants_.clear();
  if (capture_stream_ != nullptr) cudaStreamDestroy(capture_stream_);
  capture_stream_ = nullptr;
  replay_stream_ = nullptr;
}

void Graph::capture_begin() {
  LOOM_CHECK(capturing_graph[device_] == nullptr,
             "CUDA graph: this thread is already capturing on cuda:", device_);
  LOOM_CHECK(refreshing_graph[device_] == nullptr,
             "CUDA graph: cannot capture while a graph refreshes");
  if (captured()) reset();
  DeviceGuard guard(device_);
  // The constants' block comes from the shared cache, before the private pool takes over.
  if (constants_device_ == nullptr) constants_device_ = allocate(kConstantBytes, device_);
  if (capture_stream_ == nullptr) capture_stream_ = create_stream(device_);
  if (pool_ == 0) pool_ = create_pool(device_);
  constants_.clear();
  // Relaxed: the capture's pool calls cudaMalloc, which the stricter modes forbid; the calls that
  // would break the graph are refused by loom itself (check_not_capturing).
  LOOM_CUDA_CHECK(cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeRelaxed));
  stream_before_capture[device_] = current_stream(device_);
  set_current_stream(device_, capture_stream_);
  use_pool(device_, pool_);
  capturing_graph[device_] = this;
}

void Graph::capture_end() {
  LOOM_CHECK(capturing_graph[device_] == this,
             "CUDA graph: capture_end without capture_begin on cuda:", device_);
  capturing_graph[device_] = nullptr;
  use_pool(device_, 0);
  set_current_stream(device_, stream_before_capture[device_]);
  DeviceGuard guard(device_);
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(capture_stream_, &graph);
  if (status != cudaSuccess || graph == nullptr) {
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    reset();
    LOOM_FAIL(
        "CUDA graph capture on cuda:", device_, " failed: ", cudaGetErrorString(status),
        " (a call inside the captured code that a graph cannot hold, such as a synchronisation "
        "or work on a stream the capture did not join)");
  }
  graph_ = graph;
  LOOM_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &num_nodes_));
  LOOM_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  constants_dirty_ = !constants_.empty();
}

void Graph::capture_abort() noexcept {
  if (capturing_graph[device_] != this) return;
  capturing_graph[device_] = nullptr;
  use_pool(device_, 0);
  set_current_stream(device_, stream_before_capture[device_]);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(capture_stream_, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();  // the capture's failure is the caller's error, not the next call's
  // Nothing of the capture ran: its blocks are ordinary free memory.
  if (pool_ != 0) release_pool(device_, pool_, stream_before_capture[device_]);
  pool_ = 0;
  constants_.clear();
}

void Graph::refresh(const std::function<void()>& host_code) {
  LOOM_CHECK(captured(), "CUDA graph refresh: nothing has been captured");
  LOOM_CHECK(
      capturing_graph[device_] == nullptr && refreshing_graph[device_] == nullptr,
      "CUDA graph refresh: this thread is already capturing or refreshing on cuda:", device_);
  refreshing_graph[device_] = this;
  refresh_cursor_ = 0;
  try {
    host_code();
  } catch (...) {
    refreshing_graph[device_] = nullptr;
    throw;
  }
  refreshing_graph[device_] = nullptr;
  LOOM_CHECK(align_up(refresh_cursor_) == align_up(constants_.size()),
             "CUDA graph refresh: the host code stored ", refresh_cursor_,
             " bytes of replay constants where the capture stored ", constants_.size(),
             "; it must make the calls of the capture, in the same order");
  constants_dirty_ = !constants_.empty();
}

void Graph::upload_constants() {
  StreamHandle stream = current_stream(device_);
  for (size_t offset = 0; offset < constants_.size(); offset += kUploadChunk) {
    UploadChunk chunk;
    const size_t n = std::min(kUploadChunk, constants_.size() - offset);
    std::memcpy(chunk.bytes, constants_.data() + offset, n);
    store_constants<<<1, 256, 0, stream>>>(
        chunk, static_cast<unsigned char*>(constants_device_) + offset, n);
    LOOM_CUDA_KERNEL_CHECK();
  }
  constants_dirty_ = false;
}

void Graph::replay() {
  LOOM_CHECK(captured(), "CUDA graph replay: nothing has been captured");
  LOOM_CHECK(capturing_graph[device_] == nullptr,
             "CUDA graph replay: cannot replay while capturing on cuda:", device_);
  DeviceGuard guard(device_);
  if (constants_dirty_) upload_constants();
  replay_stream_ = current_stream(device_);
  LOOM_CUDA_CHECK(cudaGraphLaunch(exec_, replay_stream_));
}

void Graph::keep_alive(std::shared_ptr<void> owner) {
  for (const std::shared_ptr<void>& kept : kept_alive_) {
    if (kept == owner) return;
  }
  kept_alive_.push_back(std::move(owner));
}

void keep_alive_while_captured(int device, std::shared_ptr<void> owner) {
  if (device < 0 || device >= kMaxDevices) return;
  if (Graph* g = capturing_graph[device]) g->keep_alive(std::move(owner));
}

bool capturing(int device) {
  return device >= 0 && device < kMaxDevices && capturing_graph[device] != nullptr;
}

void check_not_capturing(int device, const char* what, const char* why) {
  LOOM_CHECK(!capturing(device), what, " cannot be captured into a CUDA graph: ", why);
}

ReplayConstant replay_constant(int device, const void* bytes, size_t size) {
  check_device_index(device);
  if (Graph* g = capturing_graph[device]) return ReplayConstantSink::put(*g, bytes, size, false);
  if (Graph* g = refreshing_graph[device]) return ReplayConstantSink::put(*g, bytes, size, true);
  return {nullptr, true};
}

}  // namespace loom::cuda
