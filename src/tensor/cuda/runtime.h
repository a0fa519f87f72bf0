// The CUDA runtime as loom uses it: the thread-local current device and current stream, guards
// that set and restore them, and synchronisation. No CUDA header is needed to include this.
#pragma once

struct CUstream_st;
struct CUevent_st;

namespace loom::cuda {

using StreamHandle = CUstream_st*;  // the same type as cudaStream_t

// The current device of this thread (cudaGetDevice) and setting it.
int current_device();
void set_device(int device);

// The stream loom's work on `device` goes to from this thread. Unless a StreamGuard says
// otherwise it is the device's compute stream: one non-blocking stream per device, created on
// first use and shared by all threads, so loom never serialises on the legacy default stream.
StreamHandle current_stream(int device);
StreamHandle default_stream(int device);
void set_current_stream(int device, StreamHandle stream);
// A new non-blocking stream on `device` (for communication or copies); destroy_stream frees it.
StreamHandle create_stream(int device);
void destroy_stream(int device, StreamHandle stream);

// Lets `device` and `peer` read and write each other's memory directly (NVLink or PCIe peer
// to peer), in both directions, once per process; copies between them then no longer go through
// host memory. Returns whether the hardware allows it (false: copies still work, staged).
bool enable_peer_access(int device, int peer);

// Waits for all work on the device (cudaDeviceSynchronize) or on one stream.
void synchronize(int device);
void synchronize_stream(StreamHandle stream);

// Brackets what a profiler started with its capture off records (ncu --profile-from-start off):
// cudaProfilerStart and cudaProfilerStop.
void profiler_start();
void profiler_stop();

// A CUDA event: device-side timing (elapsed_ms between two recorded events) and ordering
// between streams (wait makes a stream wait for the event without blocking the host).
class Event {
 public:
  // `timing` false makes an event for ordering only, cheaper to record and wait on (a
  // communication backend records several a collective); elapsed_ms needs timing ones.
  explicit Event(int device, bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(StreamHandle stream);
  void wait(StreamHandle stream) const;  // `stream` waits for this event
  void synchronize() const;              // the host waits for this event
  bool query() const;                    // whether the work before the record has finished
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  int device_;
  CUevent_st* event_ = nullptr;
};

class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

class StreamGuard {
 public:
  StreamGuard(int device, StreamHandle stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  StreamHandle previous_;
};

}  // namespace loom::cuda
