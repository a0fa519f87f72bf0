// The handle of one asynchronous collective. wait() blocks the host until it is done;
// wait_stream() orders the current CUDA stream after it without blocking the host. A failure
// (a peer's error, a timeout, an abort) surfaces as a loom::Error that names the rank, the
// operation, its sequence number, the tensor and how long it waited. Never hangs: every wait
// has the group's deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/distributed/reduce_op.h"
#include "loom/tensor/tensor.h"

namespace loom::cuda {
class Event;
}

namespace loom::dist {

enum class OpKind : uint8_t { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };
const char* op_kind_name(OpKind kind);  // "all_reduce", ...

// What a collective is, as errors and the cross-rank fingerprint check describe it.
struct CollectiveInfo {
  OpKind kind = OpKind::Barrier;
  uint64_t sequence = 0;            // the group's count of collectives before this one
  ReduceOp reduce = ReduceOp::Sum;  // all_reduce, reduce_scatter
  int root = -1;                    // broadcast
  DType dtype = kFloat32;
  Shape shape;  // the caller's tensor (all_gather: the input; reduce_scatter: the output)
  // Set for watched device work that is not one collective (ProcessGroup::watch_stream): what
  // it is, as errors name it; the fields above then mean nothing.
  std::string what;

  // "all_reduce #3 (sum, float32 [4, 5])"
  std::string describe() const;
};

class Work {
 public:
  using Clock = std::chrono::steady_clock;
  // `who` names the rank in errors ("rank 1 of 4 (threads)"); `on_timeout` is called once when
  // a wait passes the deadline, with the reason, so the group can abort every other pending work.
  Work(CollectiveInfo info, std::string who, Device device, std::chrono::milliseconds timeout,
       std::function<void(const std::string&)> on_timeout);
  ~Work();
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // Blocks until the collective has finished (for CUDA tensors: on the device too), or throws.
  void wait();
  // CUDA: the current stream of the work's device waits for the collective; the host waits only
  // until the collective is queued. CPU: the same as wait().
  void wait_stream();
  // Finished, successfully or not; never blocks.
  bool is_completed();
  bool is_failed();
  const CollectiveInfo& info() const { return info_; }

  // --- the backend's side ---------------------------------------------------------------
  // The tensors the collective reads or writes stay alive until it has finished.
  void keep_alive(std::vector<Tensor> tensors);
  // CUDA: queued on a stream; `done` completes with it.
  void mark_launched(std::shared_ptr<cuda::Event> done);
  // CUDA: recorded into a graph being captured, which runs it at every replay. For the host it
  // is complete now (there is nothing to poll: its events exist only inside the graph), while
  // wait_stream() still orders the capture's stream after it through `done`.
  void mark_captured(std::shared_ptr<cuda::Event> done);
  void mark_completed();
  void mark_failed(const std::string& reason);  // the first reason wins
  Clock::time_point deadline() const { return deadline_; }
  // For the watchdog: completes a launched work whose event has finished; returns is_completed().
  bool poll();

 private:
  enum class State { Pending, Launched, Completed, Failed };
  // Waits until the state is at least `target`, polling a launched work's event, up to the
  // deadline; throws on failure or timeout.
  void wait_until(State target);
  [[noreturn]] void throw_failure();
  double waited_seconds() const;

  const CollectiveInfo info_;
  const std::string who_;
  const Device device_;
  const Clock::time_point start_, deadline_;
  const std::function<void(const std::string&)> on_timeout_;

  std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::Pending;
  std::string failure_;
  std::shared_ptr<cuda::Event> done_;
  std::vector<Tensor> alive_;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace loom::dist
