// CUDA graphs: a sequence of loom's work on one device captured once and replayed with a single
// launch, which removes the host's per-kernel cost from steps made of many small kernels.
//
// While a thread captures, loom's ops on the device record into the graph instead of running:
// they go to a capture stream, their memory comes from the graph's private pool (see
// caching_allocator.h), and anything whose result the host would need now, or that would bake a
// host value into the graph where each replay needs a new one, is refused with a loom::Error
// (check_not_capturing): a copy to the host, a synchronisation, a random draw.
//
// Numbers the host works out anew for every replay (an optimizer's learning rate and bias
// corrections) are replay constants: captured kernels read them from device memory, and
// Graph::refresh reruns the host code that computes them before a replay, with the launches
// that would use them turned into stores (replay_constant).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "loom/tensor/cuda/caching_allocator.h"
#include "loom/tensor/cuda/runtime.h"

struct CUgraph_st;
struct CUgraphExec_st;

namespace loom::cuda {

class Graph {
 public:
  explicit Graph(int device);
  // Waits for the graph's replays, then gives its memory back to the shared cache.
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Starts recording this thread's work on the device. Throws if this thread already captures.
  void capture_begin();
  // Ends the recording and instantiates the graph. When something during the capture broke it
  // (an error thrown out of the captured code, or a CUDA call that a capture cannot take),
  // throws a loom::Error saying so; the Graph is then empty and may capture again.
  void capture_end();
  // Ends a capture that failed, discarding it (for error paths; never throws).
  void capture_abort() noexcept;

  // Reruns `host_code` with every replay_constant() call storing its new value instead of
  // launching; the values upload (one copy on the current stream) before the next replay. The
  // calls must come in the order, and with the sizes, of the capture.
  void refresh(const std::function<void()>& host_code);
  // Launches the graph on the device's current stream.
  void replay();

  bool captured() const { return exec_ != nullptr; }
  // What the graph's nodes need to outlive its replays (the communicator of a captured
  // collective): released only after the last replay has finished and the graph is destroyed.
  void keep_alive(std::shared_ptr<void> owner);
  int device() const { return device_; }
  size_t num_nodes() const { return num_nodes_; }

 private:
  friend struct ReplayConstantSink;
  void reset() noexcept;
  void upload_constants();

  int device_;
  StreamHandle capture_stream_ = nullptr;
  PoolId pool_ = 0;
  CUgraph_st* graph_ = nullptr;
  CUgraphExec_st* exec_ = nullptr;
  size_t num_nodes_ = 0;
  StreamHandle replay_stream_ = nullptr;  // where the last replay ran (waited for on destruction)
  // Replay constants: their host values (in capture order) and the device block they upload to.
  std::vector<unsigned char> constants_;
  void* constants_device_ = nullptr;
  size_t refresh_cursor_ = 0;
  bool refreshing_ = false;
  bool constants_dirty_ = false;
  std::vector<std::shared_ptr<void>> kept_alive_;
};

// Whether this thread is capturing work on `device` into a Graph now.
bool capturing(int device);
// While this thread captures on `device`, the graph being captured keeps `owner` alive (see
// Graph::keep_alive); otherwise nothing happens.
void keep_alive_while_captured(int device, std::shared_ptr<void> owner);
// Throws loom::Error "<what> cannot be captured into a CUDA graph: <why>" while this thread
// captures on `device`.
void check_not_capturing(int device, const char* what, const char* why);

// What a launcher of a kernel with per-replay constants does (see the file comment).
struct ReplayConstant {
  const void* device_address;  // where the kernel reads the value; null outside a graph
  bool launch;                 // false while a Graph refreshes: the value is stored, nothing runs
};
// Outside a capture or refresh: {nullptr, true}, pass the value as a kernel argument. While
// capturing: stores `size` bytes and returns their device address. While refreshing: stores
// the new value at the same place and returns launch = false.
ReplayConstant replay_constant(int device, const void* bytes, size_t size);

}  // namespace loom::cuda
