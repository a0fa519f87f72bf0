// The abort notices of one MPI group: a point-to-point message on the group's communicator
// that carries an aborting rank's reason to every other rank. Private to src/distributed/mpi/.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loom::dist::mpi {

class AbortNotices {
 public:
  // Keeps a receive for a peer's notice posted on `comm` (for a world of more than one). The
  // caller holds call_mutex(); throws when MPI refuses.
  void listen(MPI_Comm comm, int size);
  // A peer's notice, if one has arrived, as "rank 1 of 4 aborted the group: <its reason>";
  // after one, no more are taken (one is enough). The caller holds call_mutex().
  std::optional<std::string> take();
  // Sends `reason` (cut to a fixed length) to every rank of `comm` but `rank`; waits a moment
  // for the sends to complete, then leaves them to MPI. Best effort: a peer that cannot be
  // told still fails at its own deadline. Takes call_mutex() itself.
  static void send(MPI_Comm comm, int rank, int size, const std::string& reason);
  // Cancels the receive. Takes call_mutex() itself.
  void stop();

 private:
  int size_ = 1;
  MPI_Request request_ = MPI_REQUEST_NULL;
  // Shared so that a receive MPI would not cancel in time can keep its buffer for good.
  std::shared_ptr<std::vector<char>> buffer_;
};

}  // namespace loom::dist::mpi
