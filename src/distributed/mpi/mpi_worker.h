// The worker thread of one MPI group: the only thread that calls MPI for it. It duplicates
// MPI_COMM_WORLD, then runs the queued collectives in order, each as a non-blocking MPI call
// polled with MPI_Test until it completes, its deadline passes or the group is aborted, so no
// thread ever blocks inside MPI. Private to src/distributed/mpi/.
//
// Aborts reach the other ranks through notices (mpi_notices.h): a rank that aborts tells every
// other rank, whose pending collectives then fail at once with its reason instead of waiting
// for their deadline.
//
// MPI cannot cancel a collective that a peer never joins. A given-up collective stays pending
// in MPI for good: its buffers are kept until the process exits (MPI may still write them if
// the peers join late), and an aborted group never frees its communicator, so its context id
// is never reused by a later group that could receive the stale traffic. Neither blocks the
// process from exiting or MPI_Finalize (see mpi_runtime.cpp).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "loom/distributed/mpi/mpi_notices.h"
#include "loom/distributed/mpi/mpi_runtime.h"
#include "loom/distributed/work.h"
#include "loom/tensor/tensor.h"

namespace loom::dist::mpi {

class Worker final : public ExitStoppable {
 public:
  using Clock = std::chrono::steady_clock;
  // Aborts the group (ProcessGroup::abort): how the worker fails every pending work of it.
  using AbortGroup = std::function<void(const std::string& reason)>;

  // Starts the thread, which duplicates MPI_COMM_WORLD within `setup_timeout`. `who` names
  // this rank in errors. Every rank must start its workers in the same order.
  static std::shared_ptr<Worker> start(int rank, int size, std::string who,
                                       std::chrono::milliseconds setup_timeout,
                                       AbortGroup abort_group);
  ~Worker() override;

  // Blocks until the communicator exists; throws naming the cause when it will not.
  void wait_ready();
  // Queues a collective; the worker completes or fails `work`.
  void submit(Tensor input, Tensor output, WorkPtr work);
  // The group's on_abort: fail what is queued, make the running collective give up, and tell
  // the other ranks (unless the abort came from one of them).
  void note_abort(const std::string& reason);
  // Stops the thread: pending collectives fail with `reason`. Joins it, or, when it is stuck
  // inside MPI past a deadline, leaves it running detached (it owns a reference to this
  // worker). After shutdown the worker never calls AbortGroup again.
  void shutdown(const std::string& reason);

  void request_exit_stop() override;
  bool wait_stopped(Clock::time_point deadline) override;

 private:
  struct Task {
    Tensor input, output;
    WorkPtr work;
  };
  enum class Outcome { Done, Failed, Aborted, Stopped, TimedOut };

  Worker(int rank, int size, std::string who, std::chrono::milliseconds setup_timeout,
         AbortGroup abort_group);
  void run();
  bool set_up();
  void serve(const Task& task);
  // The always-on check that every rank runs the same collective (kind, dtype, sizes, root,
  // reduction, sequence number): false, with the task failed and the group aborted, if not.
  bool guard_matches(const Task& task);
  // Polls one request of task's collective; on any end but completion, fails the task (aborting
  // the group on a timeout or MPI error), keeps its buffers and `scratch`, and returns false.
  bool await(const Task& task, MPI_Request* request, std::shared_ptr<const void> scratch);
  // Polls `request` (and the abort notice when `listen`) until it completes or gives up;
  // Failed leaves MPI's message in `error`.
  Outcome poll(MPI_Request* request, Clock::time_point deadline, bool listen, std::string& error);
  void on_remote_abort(const std::string& reason);
  // Takes a peer's notice if one has come; sends this rank's once it has aborted.
  void service_notices();
  void abandon(const Task& task);
  void fail_setup(const std::string& message);
  void request_stop(const std::string& reason);
  void clean_up();
  void abort_group(const std::string& reason);
  std::string stop_reason();
  std::string abort_reason();

  const int rank_, size_;
  const std::string who_;
  const std::chrono::milliseconds setup_timeout_;
  std::thread thread_;

  std::mutex callback_mutex_;  // guards abort_group_ against shutdown
  AbortGroup abort_group_;

  std::mutex mutex_;  // guards the fields below it
  std::condition_variable changed_;
  std::deque<Task> queue_;
  enum class Setup { Pending, Ready, Failed } setup_ = Setup::Pending;
  std::string setup_error_;
  std::string abort_reason_, stop_reason_;
  bool stopped_ = false;  // the thread has made its last MPI call
  std::atomic<bool> aborted_{false}, stop_requested_{false};

  // The worker thread's own.
  MPI_Comm comm_ = MPI_COMM_NULL;
  AbortNotices notices_;
  bool notices_done_ = false;  // sent ours, or the abort came from a peer
  bool abandoned_ = false;     // a collective was given up on: the communicator stays
};

}  // namespace loom::dist::mpi
