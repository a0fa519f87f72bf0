// The NCCL backend of nccl_group.h.
#include "loom/distributed/nccl_group.h"

#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>

#include "loom/distributed/event_pool.h"
#include "loom/distributed/poll.h"
#include "loom/distributed/store_abort.h"
#include "loom/distributed/watchdog.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"

#define LOOM_NCCL_CHECK(call) LOOM_LIBRARY_CHECK("NCCL", call, ncclSuccess, ncclGetErrorString)

namespace loom::dist {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    case DType::Int64:
      return ncclInt64;
    case DType::Int32:
      return ncclInt32;
    case DType::UInt8:
      return ncclUint8;
    case DType::BFloat16:
      break;  // not reduced by loom's other backends either
  }
  ::loom::detail::throw_unsupported_dtype("NCCL", dtype);
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  return ncclSum;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class NcclGroup : public ProcessGroup {
 public:
  NcclGroup(const NcclId& id, int rank, int size, int device, const GroupOptions& options,
            const std::atomic<bool>* cancel, std::shared_ptr<Store> store)
      : ProcessGroup(rank, size, cuda_device(device), options), device_(device) {
    warn_if_blocking_forced();
    cuda::DeviceGuard guard(device);
    stream_ = cuda::create_stream(device);
    ncclUniqueId uid;
    static_assert(sizeof(uid) == sizeof(NcclId), "NCCL's unique id changed size");
    std::memcpy(&uid, id.data(), sizeof(uid));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // a rank that never joins must not block this one forever
    const Clock::time_point start = Clock::now();
    const ncclResult_t status = ncclCommInitRankConfig(&comm_, size, uid, rank, &config);
    if (status != ncclSuccess && status != ncclInProgress) {
      cuda::destroy_stream(device, stream_);
      throw Error(detail::concat("loom.dist: ", who(), ": joining the NCCL communicator failed: ",
                                 ncclGetErrorString(status)));
    }
    const std::string failure = settle(start + options.timeout, cancel);
    if (!failure.empty()) {
      ncclCommAbort(comm_);
      cuda::destroy_stream(device, stream_);
      throw Error(detail::concat("loom.dist: ", who(), ": joining the NCCL communicator of ", size,
                                 " ranks on cuda:", device, " failed after ", seconds_since(start),
                                 " s: ", failure));
    }
    barrier_buffer_ = zeros({1}, TensorOptions(kFloat32).device(cuda_device(device)));
    ready_ = std::make_unique<cuda::Event>(device, false);
    if (store) abort_signal_.emplace(std::move(store));
    watchdog_ = std::make_unique<Watchdog>(
        [this] { cuda::set_device(device_); }, [this] { return check_health(); },
        [this](const std::string& reason) { abort(reason); }, std::chrono::milliseconds(2));
  }

  ~NcclGroup() override {
    // Destroyed while an exception leaves this rank: the peers would wait for its collectives
    // until their timeout, so they are told now (through the store, when processes).
    if (std::uncaught_exceptions() > 0)
      abort(detail::concat(who(), " left its group while an exception was thrown"));
    watchdog_.reset();
    try {
      close();
    } catch (const std::exception&) {
      // Nobody is left to tell: the collectives that failed have said so through their works.
    }
  }

  const char* backend() const override { return "nccl"; }
  bool captures_collectives() const override { return true; }

 protected:
  void start(const Collective& c, const WorkPtr& work) override {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (comm_aborted_) {
      work->mark_failed(abort_reason());
      return;
    }
    cuda::DeviceGuard guard(device_);
    // The communication stream starts where the caller's stream is now (a wait takes the
    // event's state when it is queued, so one event serves every collective).
    ready_->record(cuda::current_stream(device_));
    ready_->wait(stream_);
    const ncclResult_t status = enqueue(c);
    const std::string failure = status == ncclSuccess || status == ncclInProgress
                                    ? settle(work->deadline(), nullptr)
                                    : detail::concat("NCCL: ", ncclGetErrorString(status));
    if (!failure.empty()) {
      work->mark_failed(failure);
      watchdog_->poke(failure);  // abort() needs comm_mutex_, which this thread holds
      return;
    }
    std::shared_ptr<cuda::Event> done = events_.spare();
    done->record(stream_);
    // Inside a capture the collective is a node of the graph: the watchdog cannot poll its
    // event, and NCCL's asynchronous error is what reports a replay's failure.
    if (cuda::capturing(device_)) {
      // NCCL finalises a communicator only once every graph that captured it is gone.
      cuda::keep_alive_while_captured(device_, shared_from_this());
      work->mark_captured(std::move(done));
    } else {
      work->mark_launched(std::move(done));
    }
  }

  void on_abort(const std::string& reason) override {
    // Other processes first: ncclCommAbort ends only this process's kernels. A start() under
    // way sees the abort flag in settle() and lets go of the mutex within microseconds.
    if (abort_signal_ && !reason_came_from_store(reason)) abort_signal_->raise(who(), reason);
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (comm_aborted_) return;
    comm_aborted_ = true;
    // Ends the kernels that wait for peers, so the streams that waited on them move on.
    ncclCommAbort(comm_);
  }

 private:
  // NCCL's reduction for `op`. Over one rank the mean is the sum itself, bit for bit; saying so
  // also steps around NCCL 2.28.3, whose out-of-place ncclAvg on float64 leaves every element
  // past the millionth unwritten when the world has one rank (seen on the H200 machines, not in
  // 2.28.9).
  ncclRedOp_t reduction(ReduceOp op) const {
    return nccl_op(op == ReduceOp::Avg && size() == 1 ? ReduceOp::Sum : op);
  }

  ncclResult_t enqueue(const Collective& c) {
    const CollectiveInfo& info = c.info;
    switch (info.kind) {
      case OpKind::AllReduce:
        return ncclAllReduce(c.input.raw_data(), c.output.raw_data(),
                             static_cast<size_t>(c.input.numel()), nccl_dtype(info.dtype),
                             reduction(info.reduce), comm_, stream_);
      case OpKind::Broadcast:
        return ncclBroadcast(c.input.raw_data(), c.output.raw_data(),
                             static_cast<size_t>(c.input.numel()), nccl_dtype(info.dtype),
                             info.root, comm_, stream_);
      case OpKind::AllGather:
        return ncclAllGather(c.input.raw_data(), c.output.raw_data(),
                             static_cast<size_t>(c.input.numel()), nccl_dtype(info.dtype), comm_,
                             stream_);
      case OpKind::ReduceScatter:
        return ncclReduceScatter(c.input.raw_data(), c.output.raw_data(),
                                 static_cast<size_t>(c.output.numel()), nccl_dtype(info.dtype),
                                 reduction(info.reduce), comm_, stream_);
      case OpKind::Barrier:
        // A one-element all-reduce: done on every rank only once every rank has reached it.
        return ncclAllReduce(barrier_buffer_.raw_data(), barrier_buffer_.raw_data(), 1, ncclFloat32,
                             ncclSum, comm_, stream_);
    }
    return ncclInvalidArgument;
  }

  // Waits while the non-blocking communicator is busy (joining, or enqueuing a collective, which
  // with two or more ranks NCCL does on a helper thread of its own); returns "" once it is
  // ready, else what went wrong. Spins before it sleeps (poll.h): a collective's enqueue takes
  // microseconds, and this runs inside backward's bucket hooks. Gives up at once when the group
  // is aborted or *cancel turns true, so that an abort never queues behind a stuck enqueue.
  std::string settle(Clock::time_point deadline, const std::atomic<bool>* cancel) {
    std::string failure;
    const PollEnd end = poll_until(
        [&] {
          ncclResult_t state = ncclSuccess;
          const ncclResult_t query = ncclCommGetAsyncError(comm_, &state);
          if (query != ncclSuccess) {
            failure = detail::concat("NCCL: ", ncclGetErrorString(query));
          } else if (state != ncclSuccess && state != ncclInProgress) {
            failure = detail::concat("NCCL: ", ncclGetErrorString(state), " (",
                                     ncclGetLastError(comm_), ")");
          }
          return state != ncclInProgress || !failure.empty();
        },
        deadline, [&] { return is_aborted() || (cancel && cancel->load()); });
    if (!failure.empty()) return failure;
    switch (end) {
      case PollEnd::Finished:
        return {};
      case PollEnd::Stopped:
        return is_aborted() ? detail::concat("the group was aborted: ", abort_reason())
                            : std::string("another rank failed first");
      case PollEnd::TimedOut:
        break;
    }
    return "timed out (the group's timeout): a rank never joined or stopped answering";
  }

  // NCCL_COMM_BLOCKING=1 overrides config.blocking = 0: every NCCL call then blocks until the
  // peers answer, and a rank that never joins hangs this one past the group's timeout. Said at
  // every communicator made so: a line a group, and a setting nobody should keep.
  static void warn_if_blocking_forced() {
    const char* v = std::getenv("NCCL_COMM_BLOCKING");
    if (v != nullptr && std::strcmp(v, "1") == 0) {
      std::cerr
          << "loom.dist: NCCL_COMM_BLOCKING=1 makes NCCL's calls blocking: the group's timeout "
             "and abort can no longer end a collective whose peer never arrives (unset it)\n";
    }
  }

  static constexpr const char* kFromStore = "through the job's store: ";
  static bool reason_came_from_store(const std::string& reason) {
    return reason.rfind(kFromStore, 0) == 0;
  }

  // The watchdog's check: completes finished collectives (releasing their tensors), and names
  // what should abort the communicator: another process's abort read from the store, an error
  // NCCL reports, the oldest collective (or watched replay) past its deadline, also when nobody
  // waits on the host (DDP only makes streams wait). The store and the deadlines are read
  // without comm_mutex_: a start() may hold it for as long as a peer takes to connect, and the
  // abort those bring is what ends that wait.
  std::string check_health() {
    // A store round trip is ~0.1 ms: asked every 100 ms, not at every check.
    if (abort_signal_ && Clock::now() >= next_store_poll_) {
      next_store_poll_ = Clock::now() + std::chrono::milliseconds(100);
      if (std::optional<std::string> news = abort_signal_->poll()) return kFromStore + *news;
    }
    std::string nccl_error;
    {
      std::unique_lock<std::mutex> lock(comm_mutex_, std::try_to_lock);
      if (lock.owns_lock()) {  // else a start() is settling, and reads NCCL's error itself
        if (comm_aborted_) return {};
        ncclResult_t state = ncclSuccess;
        ncclCommGetAsyncError(comm_, &state);
        if (state != ncclSuccess && state != ncclInProgress) {
          nccl_error = detail::concat("NCCL reported an error: ", ncclGetErrorString(state), " (",
                                      ncclGetLastError(comm_), ")");
        }
      }
    }
    if (!nccl_error.empty()) {
      // A peer's death is often what NCCL reports; the store may know who failed first and why.
      if (std::optional<std::string> news = abort_signal_ ? abort_signal_->poll() : std::nullopt) {
        return detail::concat(kFromStore, *news, "; then ", nccl_error);
      }
      return nccl_error;
    }
    const std::vector<WorkPtr> pending = in_flight();
    if (!pending.empty() && Clock::now() >= pending.front()->deadline()) {
      return detail::concat(pending.front()->info().describe(),
                            " passed the group's timeout on the device: a peer never joined it");
    }
    return {};
  }

  // Lets the queued collectives finish (each up to its deadline), then finalises; aborts when
  // one does not finish.
  void close() {
    bool finished = true;
    for (const WorkPtr& w : in_flight()) {
      if (poll_until([&] { return w->is_completed(); }, w->deadline()) != PollEnd::Finished) {
        finished = false;
        break;
      }
    }
    {
      std::lock_guard<std::mutex> lock(comm_mutex_);
      if (!comm_aborted_) {
        if (finished && ncclCommFinalize(comm_) != ncclSuccess) finished = false;
        if (finished && settle(Clock::now() + options().timeout, nullptr).empty()) {
          ncclCommDestroy(comm_);
        } else {
          ncclCommAbort(comm_);
        }
        comm_aborted_ = true;
      }
    }
    barrier_buffer_ = Tensor();
    ready_.reset();
    events_.clear();
    cuda::synchronize_stream(stream_);
    cuda::destroy_stream(device_, stream_);
  }

  const int device_;
  cuda::StreamHandle stream_ = nullptr;  // the communication stream
  ncclComm_t comm_ = nullptr;
  Tensor barrier_buffer_;
  std::unique_ptr<cuda::Event> ready_;  // the caller's stream, at each collective
  EventPool events_{device_};           // each collective's completion (start() only)

  std::mutex comm_mutex_;  // one thread at a time in NCCL calls on comm_
  bool comm_aborted_ = false;

  std::optional<StoreAbortSignal> abort_signal_;  // processes: the job's store tells the others
  Clock::time_point next_store_poll_{};           // the watchdog's thread only
  std::unique_ptr<Watchdog> watchdog_;            // last: it calls into everything above
};

}  // namespace

NcclId nccl_unique_id() {
  ncclUniqueId uid;
  LOOM_NCCL_CHECK(ncclGetUniqueId(&uid));
  NcclId id;
  std::memcpy(id.data(), &uid, sizeof(uid));
  return id;
}

GroupPtr make_nccl_group(const NcclId& id, int rank, int size, int device,
                         const GroupOptions& options, const std::atomic<bool>* cancel,
                         std::shared_ptr<Store> store) {
  LOOM_CHECK(size >= 1, "make_nccl_group: world size must be at least 1, got ", size);
  LOOM_CHECK(rank >= 0 && rank < size, "make_nccl_group: rank ", rank, " is outside [0, ", size,
             ")");
  LOOM_CHECK(device >= 0 && device < cuda_device_count(), "make_nccl_group: rank ", rank,
             " asks for cuda:", device, " but ", cuda_device_count(), " CUDA devices are visible");
  return std::make_shared<NcclGroup>(id, rank, size, device, options, cancel, std::move(store));
}

std::string nccl_version() {
  int version = 0;
  LOOM_NCCL_CHECK(ncclGetVersion(&version));
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9.
  return detail::concat(version / 10000, ".", (version / 100) % 100, ".", version % 100);
}

}  // namespace loom::dist
