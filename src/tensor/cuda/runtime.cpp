// Current device and stream (thread-local), the per-device compute streams, and the error path
// of the check macros.
#include "loom/tensor/cuda/runtime.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/device.h"

namespace loom {

bool built_with_cuda() { return true; }

int cuda_device_count() {
  // Asked once: the count does not change while the process runs, and a machine without a
  // driver answers with an error we read as "no GPU".
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

namespace cuda {

namespace detail {
void throw_cuda_error(const char* library, const char* call, const char* message, const char* file,
                      int line) {
  throw Error(
      ::loom::detail::concat(library, " error: ", message, " in ", call, " at ", file, ":", line));
}
}  // namespace detail

namespace {

constexpr int kMaxDevices = 64;
thread_local StreamHandle current_streams[kMaxDevices] = {};

void check_device(int device) {
  LOOM_CHECK(device >= 0 && device < cuda_device_count(), "CUDA device ", device,
             " does not exist (", cuda_device_count(), " visible)");
}

}  // namespace

int current_device() {
  int device = 0;
  LOOM_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void set_device(int device) {
  check_device(device);
  LOOM_CUDA_CHECK(cudaSetDevice(device));
}

StreamHandle default_stream(int device) {
  check_device(device);
  static std::mutex mutex;
  static StreamHandle streams[kMaxDevices] = {};
  std::lock_guard<std::mutex> lock(mutex);
  if (!streams[device]) {
    DeviceGuard guard(device);
    LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
  }
  return streams[device];
}

StreamHandle current_stream(int device) {
  check_device(device);
  StreamHandle s = current_streams[device];
  return s ? s : default_stream(device);
}

void set_current_stream(int device, StreamHandle stream) {
  check_device(device);
  current_streams[device] = stream;
}

StreamHandle create_stream(int device) {
  DeviceGuard guard(device);
  StreamHandle stream = nullptr;
  LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

bool enable_peer_access(int device, int peer) {
  check_device(device);
  check_device(peer);
  if (device == peer) return true;
  static std::mutex mutex;
  static std::unordered_map<int, bool> enabled;  // device * kMaxDevices + peer -> allowed
  std::lock_guard<std::mutex> lock(mutex);
  const int low = std::min(device, peer), high = std::max(device, peer);
  auto found = enabled.find(low * kMaxDevices + high);
  if (found != enabled.end()) return found->second;
  int forward = 0, backward = 0;
  LOOM_CUDA_CHECK(cudaDeviceCanAccessPeer(&forward, low, high));
  LOOM_CUDA_CHECK(cudaDeviceCanAccessPeer(&backward, high, low));
  const bool allowed = forward != 0 && backward != 0;
  if (allowed) {
    for (const auto& [from, to] :
         {std::pair<int, int>{low, high}, std::pair<int, int>{high, low}}) {
      DeviceGuard guard(from);
      const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
      // Another library of the process (NCCL, a user's code) may have enabled it first.
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
      } else {
        LOOM_CUDA_CHECK(status);
      }
    }
  }
  enabled[low * kMaxDevices + high] = allowed;
  return allowed;
}

void destroy_stream(int device, StreamHandle stream) {
  DeviceGuard guard(device);
  LOOM_CUDA_CHECK(cudaStreamDestroy(stream));
}

void synchronize(int device) {
  check_not_capturing(device, "cuda::synchronize",
                      "the host cannot wait for work that only runs when replayed");
  DeviceGuard guard(device);
  LOOM_CUDA_CHECK(cudaDeviceSynchronize());
}

void synchronize_stream(StreamHandle stream) {
  check_not_capturing(current_device(), "cuda::synchronize_stream",
                      "the host cannot wait for work that only runs when replayed");
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void profiler_start() { LOOM_CUDA_CHECK(cudaProfilerStart()); }

void profiler_stop() { LOOM_CUDA_CHECK(cudaProfilerStop()); }

Event::Event(int device, bool timing) : device_(device) {
  DeviceGuard guard(device);
  LOOM_CUDA_CHECK(
      cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

void Event::record(StreamHandle stream) {
  DeviceGuard guard(device_);
  LOOM_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::wait(StreamHandle stream) const {
  LOOM_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

void Event::synchronize() const {
  check_not_capturing(device_, "Event::synchronize",
                      "the host cannot wait for work that only runs when replayed");
  LOOM_CUDA_CHECK(cudaEventSynchronize(event_));
}

bool Event::query() const {
  check_not_capturing(device_, "Event::query",
                      "work recorded in a capture has no completion to ask about");
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // "not ready" is an answer, not an error for the next check to find
    return false;
  }
  LOOM_CUDA_CHECK(status);
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  float ms = 0.0f;
  LOOM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

DeviceGuard::DeviceGuard(int device) : previous_(current_device()) {
  if (device != previous_) set_device(device);
}

DeviceGuard::~DeviceGuard() {
  int now = 0;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

StreamGuard::StreamGuard(int device, StreamHandle stream)
    : device_(device), previous_(current_streams[device]) {
  set_current_stream(device, stream);
}

StreamGuard::~StreamGuard() { current_streams[device_] = previous_; }

}  // namespace cuda
}  // namespace loom
