// The process-wide side of the MPI backend: initialising MPI on first use, the one mutex that
// serialises every MPI call, the checked-call macro, and finalising at exit. Private to
// src/distributed/mpi/ (it includes mpi.h; the public mpi_group.h does not).
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "loom/tensor/error.h"

namespace loom::dist::mpi {

// Initialises MPI with MPI_THREAD_SERIALIZED unless the program already has, then checks that
// the thread level lets loom's worker threads call MPI. Throws naming the level or the state.
void ensure_initialized();

// Held around every MPI call after initialisation: under MPI_THREAD_SERIALIZED only one thread
// may be inside MPI at a time, and each group has its own worker thread.
std::mutex& call_mutex();

// "MPI_ERR_TRUNCATE: message truncated", for error messages.
std::string error_string(int code);

[[noreturn]] void throw_mpi_error(const char* call, int code, const char* file, int line);

// Keeps `what` alive until the process ends. For the buffers of a collective that was given up
// on: MPI offers no way to cancel one, so it may still write into them if the peers join late.
void keep_forever(std::shared_ptr<const void> what);

// The pause between two MPI_Tests of something that is not done yet: a short spin, so that what
// completes at once costs little, then sleeps that grow with the time already waited (an
// eighth of it, from 10 us up to 1 ms). MPI progresses a collective only inside MPI_Test, so a
// long sleep would stall the peers too, while sleeping keeps a waiting rank from starving the
// others when cores are oversubscribed. A wait thus lasts at most about an eighth longer than
// MPI needs.
class Backoff {
 public:
  void pause();

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int spins_ = 0;
};

// What the exit handler stops before MPI_Finalize: a group's worker thread.
class ExitStoppable {
 public:
  virtual ~ExitStoppable() = default;
  // Asks the thread to leave MPI alone from now on; returns at once.
  virtual void request_exit_stop() = 0;
  // Whether the thread has stopped calling MPI by `deadline`.
  virtual bool wait_stopped(std::chrono::steady_clock::time_point deadline) = 0;
};
void register_worker(const std::shared_ptr<ExitStoppable>& worker);
// The process is leaving with an error: the exit handler calls MPI_Abort instead of finalising.
void mark_failing();
// True once the exit handler found a worker that would not stop (stuck inside MPI): MPI was
// then left unfinalised, and nothing may wait for such a worker any more.
bool exit_gave_up();

}  // namespace loom::dist::mpi

// LOOM_MPI_CHECK(MPI_Comm_rank(comm, &rank)) throws loom::Error naming the call, the file and
// line, and MPI's message. The caller holds call_mutex().
#define LOOM_MPI_CHECK(call)                                                           \
  do {                                                                                 \
    const int loom_mpi_status_ = (call);                                               \
    if (loom_mpi_status_ != MPI_SUCCESS) {                                             \
      ::loom::dist::mpi::throw_mpi_error(#call, loom_mpi_status_, __FILE__, __LINE__); \
    }                                                                                  \
  } while (0)
