// Work: the state of one collective, waited on with the group's deadline.
#include "loom/distributed/work.h"

#include "loom/distributed/poll.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/shape.h"

namespace loom::dist {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::AllReduce:
      return "all_reduce";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::AllGather:
      return "all_gather";
    case OpKind::ReduceScatter:
      return "reduce_scatter";
    case OpKind::Barrier:
      return "barrier";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

std::string CollectiveInfo::describe() const {
  if (!what.empty()) return what;
  std::string s = detail::concat(op_kind_name(kind), " #", sequence);
  if (kind == OpKind::Barrier) return s;
  s += " (";
  if (kind == OpKind::AllReduce || kind == OpKind::ReduceScatter)
    s += detail::concat(reduce_op_name(reduce), ", ");
  if (kind == OpKind::Broadcast) s += detail::concat("root ", root, ", ");
  return s + detail::concat(dtype_name(dtype), " ", shape_str(shape), ")");
}

Work::Work(CollectiveInfo info, std::string who, Device device, std::chrono::milliseconds timeout,
           std::function<void(const std::string&)> on_timeout)
    : info_(std::move(info)),
      who_(std::move(who)),
      device_(device),
      start_(Clock::now()),
      deadline_(start_ + timeout),
      on_timeout_(std::move(on_timeout)) {}

Work::~Work() = default;

double Work::waited_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Work::keep_alive(std::vector<Tensor> tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  alive_ = std::move(tensors);
}

void Work::mark_launched(std::shared_ptr<cuda::Event> done) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ != State::Pending) return;
  done_ = std::move(done);
  state_ = State::Launched;
  changed_.notify_all();
}

void Work::mark_captured(std::shared_ptr<cuda::Event> done) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ != State::Pending) return;
  done_ = std::move(done);
  state_ = State::Completed;
  alive_.clear();  // the graph's memory pool keeps what the replays touch
  changed_.notify_all();
}

void Work::mark_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::Completed || state_ == State::Failed) return;
  state_ = State::Completed;
  alive_.clear();
  done_.reset();  // finished on the device too: nothing need wait for it, and the backend may reuse
                  // it
  changed_.notify_all();
}

void Work::mark_failed(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::Completed || state_ == State::Failed) return;
  state_ = State::Failed;
  failure_ = reason;
  // The tensors stay referenced: a launched kernel may still touch them until the backend has
  // cancelled it (NCCL's abort); they go when the Work does.
  changed_.notify_all();
}

bool Work::poll() {
  std::shared_ptr<cuda::Event> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == State::Completed || state_ == State::Failed) return true;
    if (state_ != State::Launched) return false;
    done = done_;
  }
  // A thread that captures on the device cannot ask about an event (CUDA forbids it): the
  // collective counts as unfinished until another thread (the watchdog) or a later poll sees it.
  if (done && cuda::capturing(device_.index)) return false;
  if (done && !done->query()) return false;
  mark_completed();
  return true;
}

bool Work::is_completed() { return poll(); }

bool Work::is_failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == State::Failed;
}

void Work::throw_failure() {
  throw Error(detail::concat("loom.dist: ", who_, ": ", info_.describe(), " failed after ",
                             waited_seconds(), " s: ", failure_));
}

void Work::wait_until(State target) {
  // A launched CUDA work is polled (its event may belong to a kernel that waits on a peer that
  // is gone: cudaEventSynchronize could block forever); first by yielding, then by short sleeps.
  Backoff backoff;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (state_ == State::Failed) throw_failure();
    if (state_ == State::Completed || (state_ == State::Launched && target == State::Launched))
      return;
    if (Clock::now() >= deadline_) {
      lock.unlock();
      const std::string reason =
          detail::concat("timed out after ", waited_seconds(),
                         " s (the group's timeout) waiting for the other ranks");
      if (on_timeout_) on_timeout_(reason);  // aborts the group, failing this work with the reason
      mark_failed(reason);
      continue;
    }
    if (state_ == State::Pending) {
      // Woken by the backend; the bound keeps the deadline check going.
      changed_.wait_until(lock, std::min(deadline_, Clock::now() + std::chrono::milliseconds(50)));
      continue;
    }
    lock.unlock();
    if (poll()) continue;
    backoff.pause();
  }
}

void Work::wait() { wait_until(State::Completed); }

void Work::wait_stream() {
  if (!device_.is_cuda()) return wait();
  wait_until(State::Launched);
  std::shared_ptr<cuda::Event> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done = done_;
  }
  if (done) done->wait(cuda::current_stream(device_.index));
}

}  // namespace loom::dist
