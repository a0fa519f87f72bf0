// MPI's process-wide state as loom sees it: who initialised it, the call mutex, the workers
// the exit handler must stop, and the buffers of abandoned collectives.
#include "loom/distributed/mpi/mpi_runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace loom::dist::mpi {

namespace {

struct Runtime {
  std::mutex state_mutex;  // guards everything below
  bool checked = false;    // MPI is initialised with a thread level loom can use
  std::vector<std::weak_ptr<ExitStoppable>> workers;
  std::vector<std::shared_ptr<const void>> kept;
  bool gave_up = false;
  bool finalized = false;  // by the exit handler
  bool failing = false;    // end_mpi_job_at_exit: MPI_Abort, not MPI_Finalize
};

// Never destroyed: the exit handler and late group destructors use it after static destruction
// has begun.
Runtime& runtime() {
  static Runtime* r = new Runtime;
  return *r;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

// Ends every rank of the job: mpirun kills the others once one calls MPI_Abort. The pause lets
// the peers, which the failure's abort notice reached at once, print their own errors first.
[[noreturn]] void abort_job() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::fprintf(stderr, "loom.dist: this rank failed; ending the MPI job (MPI_Abort)\n");
  std::fflush(nullptr);
  if (size > 1) std::this_thread::sleep_for(std::chrono::seconds(1));
  // Not under call_mutex: a worker stuck inside MPI may hold it, and nothing runs after this.
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; should it, the process still must not finalise
}

// Runs at exit when loom initialised MPI. MPI_Finalize must come after the last MPI call of
// every thread, so each group's worker is stopped first. A worker stops within one MPI_Test
// (none blocks), so a worker that does not stop in time is inside an MPI call that never
// returns: finalising would then race with it, so MPI is left as it is (mpirun reports the
// process as having exited without finalising, which is true).
void finalize_at_exit() {
  Runtime& r = runtime();
  bool failing;
  {
    std::lock_guard<std::mutex> lock(r.state_mutex);
    failing = r.failing;
  }
  if (failing) abort_job();
  std::vector<std::shared_ptr<ExitStoppable>> live;
  {
    // Not held while the workers stop: a stopping worker may keep_forever() its buffers.
    std::lock_guard<std::mutex> lock(r.state_mutex);
    for (const auto& w : r.workers) {
      if (auto p = w.lock()) live.push_back(std::move(p));
    }
  }
  for (const auto& w : live) w->request_exit_stop();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool all_stopped = true;
  for (const auto& w : live) all_stopped = w->wait_stopped(deadline) && all_stopped;
  if (!all_stopped) {
    std::lock_guard<std::mutex> lock(r.state_mutex);
    r.gave_up = true;
    std::fprintf(stderr,
                 "loom.dist: MPI_Finalize skipped at exit: a process group's worker thread is "
                 "stuck inside an MPI call\n");
    return;
  }
  std::lock_guard<std::mutex> lock(r.state_mutex);
  std::lock_guard<std::mutex> calls(call_mutex());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  r.finalized = true;
}

}  // namespace

std::mutex& call_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return detail::concat("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

void throw_mpi_error(const char* call, int code, const char* file, int line) {
  throw Error(
      detail::concat("MPI: ", call, " failed at ", file, ":", line, ": ", error_string(code)));
}

void ensure_initialized() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> state(r.state_mutex);
  LOOM_CHECK(!r.finalized, "make_mpi_group: the process is exiting and loom has finalized MPI");
  if (r.checked) return;
  std::lock_guard<std::mutex> calls(call_mutex());
  int initialized = 0, finalized = 0;
  LOOM_MPI_CHECK(MPI_Initialized(&initialized));
  LOOM_MPI_CHECK(MPI_Finalized(&finalized));
  LOOM_CHECK(!finalized,
             "make_mpi_group: MPI has already been finalized; create MPI groups "
             "before MPI_Finalize (or before the program exits)");
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    LOOM_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    std::atexit(finalize_at_exit);
  } else {
    LOOM_MPI_CHECK(MPI_Query_thread(&provided));
  }
  LOOM_CHECK(provided >= MPI_THREAD_SERIALIZED, "make_mpi_group: MPI runs at ",
             thread_level_name(provided),
             ", but loom calls MPI from each group's worker thread and needs "
             "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (initialise MPI with MPI_Init_thread, "
             "or let loom initialise it)");
  r.checked = true;
}

void keep_forever(std::shared_ptr<const void> what) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.state_mutex);
  r.kept.push_back(std::move(what));
}

void register_worker(const std::shared_ptr<ExitStoppable>& worker) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.state_mutex);
  // Drop the entries of workers that are gone, so the list stays as long as the live groups.
  std::vector<std::weak_ptr<ExitStoppable>> live;
  for (auto& w : r.workers) {
    if (!w.expired()) live.push_back(std::move(w));
  }
  live.push_back(worker);
  r.workers.swap(live);
}

void Backoff::pause() {
  if (++spins_ <= 64) {
    std::this_thread::yield();
    return;
  }
  const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start_);
  std::this_thread::sleep_for(std::clamp<std::chrono::microseconds>(
      waited / 8, std::chrono::microseconds(10), std::chrono::milliseconds(1)));
}

void mark_failing() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.state_mutex);
  r.failing = true;
}

bool exit_gave_up() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.state_mutex);
  return r.gave_up;
}

}  // namespace loom::dist::mpi
