// ProcessGroup: the ranks of one job and their collectives. The public calls check their
// arguments, number each collective and hand it to a backend (threads_group.h, nccl_group.h,
// mpi/mpi_group.h, store_group.h), which runs it asynchronously and returns its Work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/distributed/reduce_op.h"
#include "loom/distributed/work.h"
#include "loom/tensor/tensor.h"

namespace loom::dist {

class EventPool;

class SharedMemoryAgreement;

struct GroupOptions {
  // How long a collective may wait for the other ranks before the group aborts.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  // Before each collective, compare a fingerprint of it (kind, reduce op, root, dtype, shape,
  // sequence number) across ranks, so ranks that call different collectives get an error
  // naming both sides instead of a hang or silent garbage. Costs one small all-gather and a
  // host sync per collective; the threads backend compares for free and always does.
  // LOOM_DIST_CHECK=1 in the environment turns it on too.
  bool check_collectives = false;
};

class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The device whose tensors this group's collectives take: the CPU or one CUDA device.
  Device device() const { return device_; }
  virtual const char* backend() const = 0;  // "threads", "nccl", "mpi", "tcp"
  // Whether this group's CUDA collectives can be recorded into a graph being captured (NCCL)
  // instead of being refused: the other backends complete theirs from a host thread.
  virtual bool captures_collectives() const { return false; }
  // "rank 1 of 4 (threads)", as errors name this rank.
  // Made once (a collective's Work carries it, and a string a collective builds is host time
  // on every bucket of every step).
  const std::string& who() const;

  // Every collective takes contiguous tensors on device() and works in place on its outputs.
  // tensor <- op over ranks of tensor (Avg needs a floating dtype).
  WorkPtr all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  // tensor <- root's tensor.
  WorkPtr broadcast(const Tensor& tensor, int root = 0);
  // output (size() * input.numel() elements, of input's dtype) <- every rank's input in rank
  // order: rank r's input lands at elements [r * n, (r + 1) * n), as ncclAllGather does.
  WorkPtr all_gather(const Tensor& output, const Tensor& input);
  // output (n elements) <- op over ranks of elements [rank * n, (rank + 1) * n) of their input
  // (size() * n elements).
  WorkPtr reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum);
  // Completes when every rank has called it.
  WorkPtr barrier();

  // Watches device work that runs this group's collectives without start() seeing them: a
  // replay of a graph that captured them. The returned work completes when what the current
  // stream of device() holds now has finished; until then it is in flight with the group's
  // deadline like a collective, so a replay stuck on a dead peer aborts the group (and fails its
  // waiters) instead of blocking the host forever. `what` names it in errors ("a captured
  // step's replay"). CPU groups: completed at once.
  WorkPtr watch_stream(const std::string& what);

  // Poisons the group: pending and later collectives of this rank fail with `reason`, and the
  // backend makes the other ranks' fail too (threads: at once; NCCL: its communicator is
  // aborted). Idempotent; the first reason is kept.
  void abort(const std::string& reason);
  bool is_aborted() const { return aborted_.load(); }
  std::string abort_reason() const;

  // Ranks that are threads of one process (dist::spawn) share one of these, so that
  // dist::all_equal compares through memory instead of a collective that waits for the device.
  void share_memory_with_ranks(std::shared_ptr<SharedMemoryAgreement> agreement) {
    shared_memory_ = std::move(agreement);
  }
  SharedMemoryAgreement* shared_memory() const { return shared_memory_.get(); }

  const GroupOptions& options() const { return options_; }
  void set_timeout(std::chrono::milliseconds timeout) { options_.timeout = timeout; }
  // The sequence number the next collective will get.
  uint64_t next_sequence_number() const { return sequence_; }

 protected:
  ProcessGroup(int rank, int size, Device device, GroupOptions options);

  // A numbered, checked collective for the backend to run: all_reduce and broadcast have
  // input == output; barrier has neither.
  struct Collective {
    CollectiveInfo info;
    Tensor input, output;
  };
  // Starts `c`; completes or fails `work` now or later (never blocks for the other ranks).
  virtual void start(const Collective& c, const WorkPtr& work) = 0;
  // The backend's part of abort(): tell the other ranks, cancel what is queued.
  virtual void on_abort(const std::string& reason) = 0;
  // Whether start() compares collectives across ranks itself (threads backend).
  virtual bool checks_collectives_itself() const { return false; }
  // What the backend knows of a collective that timed out, appended to the reason ("; ranks
  // [3] had not arrived"); empty when it knows nothing more.
  virtual std::string timeout_detail(uint64_t /*sequence*/) { return {}; }

  // A new Work for `info` with this group's deadline, kept in the in-flight list until it has
  // finished; a timeout aborts the group.
  WorkPtr make_work(const CollectiveInfo& info);
  // The works not yet finished (after dropping those that have), oldest first.
  std::vector<WorkPtr> in_flight();

 private:
  WorkPtr run(OpKind kind, ReduceOp reduce, int root, const Tensor& input, const Tensor& output,
              const Shape& described_shape);
  void check_tensor(const char* op, const char* role, const Tensor& t) const;
  // The fingerprint check of GroupOptions::check_collectives, through the backend itself.
  void check_matches_across_ranks(const CollectiveInfo& info);

  const int rank_, size_;
  const Device device_;
  GroupOptions options_;
  uint64_t sequence_ = 0;
  mutable std::once_flag who_once_;
  mutable std::string who_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex mutex_;  // guards abort_reason_ and in_flight_
  std::string abort_reason_;
  std::vector<WorkPtr> in_flight_;
  std::unique_ptr<EventPool> watch_events_;  // watch_stream's, on a CUDA device
  std::shared_ptr<SharedMemoryAgreement> shared_memory_;
};

using GroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace loom::dist
