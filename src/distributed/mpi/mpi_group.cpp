// MpiGroup: the ProcessGroup side of the MPI backend; the worker (mpi_worker.h) does the MPI.
#include "loom/distributed/mpi/mpi_group.h"

#include <exception>

#include "loom/distributed/mpi/mpi_runtime.h"
#include "loom/distributed/mpi/mpi_worker.h"

namespace loom::dist {

namespace {

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup(int rank, int size, const GroupOptions& options)
      : ProcessGroup(rank, size, kCPU, options) {
    // The worker aborts this group through it until shutdown(), which the destructor calls
    // before anything of the group goes.
    worker_ = mpi::Worker::start(rank, size, who(), options.timeout,
                                 [this](const std::string& reason) { abort(reason); });
  }

  ~MpiGroup() override {
    // Peers waiting in a collective this rank will never finish are told now, not at their
    // deadline; a rank that leaves with an exception ends the job when it exits.
    if (std::uncaught_exceptions() > 0) {
      abort(detail::concat(who(), " left its group while an exception was thrown"));
      mpi::mark_failing();
    }
    const size_t pending = in_flight().size();
    if (pending > 0) {
      abort(detail::concat(who(), " was destroyed with ", pending, " collectives pending"));
    }
    worker_->shutdown("the group was destroyed");
  }

  const char* backend() const override { return "mpi"; }
  void wait_ready() { worker_->wait_ready(); }

 protected:
  void start(const Collective& c, const WorkPtr& work) override {
    worker_->submit(c.input, c.output, work);
  }
  void on_abort(const std::string& reason) override { worker_->note_abort(reason); }

 private:
  std::shared_ptr<mpi::Worker> worker_;
};

}  // namespace

void end_mpi_job_at_exit() { mpi::mark_failing(); }

GroupPtr make_mpi_group(const GroupOptions& options) {
  mpi::ensure_initialized();
  int rank = 0, size = 1;
  {
    std::lock_guard<std::mutex> calls(mpi::call_mutex());
    LOOM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    LOOM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  }
  // Each group's first act is a collective on MPI_COMM_WORLD (MPI_Comm_idup), which every rank
  // must issue in the same order: two threads of one process create groups one at a time.
  static std::mutex* creating = new std::mutex;
  std::lock_guard<std::mutex> lock(*creating);
  auto group = std::make_shared<MpiGroup>(rank, size, options);
  group->wait_ready();
  return group;
}

}  // namespace loom::dist
