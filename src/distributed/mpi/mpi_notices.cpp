// Abort notices: one posted receive per group, eager sends that complete locally.
#include "loom/distributed/mpi/mpi_notices.h"

#include <algorithm>
#include <chrono>

#include "loom/distributed/mpi/mpi_runtime.h"

namespace loom::dist::mpi {

namespace {

// A point-to-point tag: MPI never matches point-to-point messages with a collective's traffic
// on the same communicator, so a notice cannot be mistaken for part of a collective.
constexpr int kTag = 7001;
// Longer reasons are cut: one receive of a fixed size stays posted.
constexpr int kBytes = 1024;
// How long sending and cancelling may take before they are left to MPI; both complete locally
// in microseconds when the job is healthy.
constexpr auto kPatience = std::chrono::seconds(1);

}  // namespace

void AbortNotices::listen(MPI_Comm comm, int size) {
  size_ = size;
  if (size < 2) return;
  buffer_ = std::make_shared<std::vector<char>>(kBytes);
  LOOM_MPI_CHECK(
      MPI_Irecv(buffer_->data(), kBytes, MPI_CHAR, MPI_ANY_SOURCE, kTag, comm, &request_));
}

std::optional<std::string> AbortNotices::take() {
  if (request_ == MPI_REQUEST_NULL) return std::nullopt;
  int arrived = 0;
  MPI_Status status;
  if (MPI_Test(&request_, &arrived, &status) != MPI_SUCCESS || !arrived) return std::nullopt;
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  length = std::clamp(length, 0, kBytes);
  return detail::concat("rank ", status.MPI_SOURCE, " of ", size_, " aborted the group: ",
                        std::string(buffer_->data(), static_cast<size_t>(length)));
}

void AbortNotices::send(MPI_Comm comm, int rank, int size, const std::string& reason) {
  if (size < 2) return;
  auto text = std::make_shared<std::string>(reason.substr(0, kBytes));
  std::vector<MPI_Request> sends;
  {
    std::lock_guard<std::mutex> calls(call_mutex());
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      MPI_Request send = MPI_REQUEST_NULL;
      if (MPI_Isend(text->data(), static_cast<int>(text->size()), MPI_CHAR, r, kTag, comm, &send) ==
          MPI_SUCCESS) {
        sends.push_back(send);
      }
    }
  }
  // Notices are small, so MPI sends them eagerly and the sends complete at once; any that do
  // not are freed (MPI finishes them on its own) with their text kept alive.
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  Backoff backoff;
  for (;;) {
    {
      std::lock_guard<std::mutex> calls(call_mutex());
      int all_done = 0;
      if (MPI_Testall(static_cast<int>(sends.size()), sends.data(), &all_done,
                      MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
          all_done) {
        return;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        for (MPI_Request& s : sends) {
          if (s != MPI_REQUEST_NULL) MPI_Request_free(&s);
        }
        break;
      }
    }
    backoff.pause();
  }
  // Outside call_mutex: keep_forever takes the runtime's state mutex, which is taken before
  // call_mutex everywhere else.
  keep_forever(text);
}

void AbortNotices::stop() {
  if (request_ == MPI_REQUEST_NULL) return;
  // A cancelled receive completes locally; if it somehow does not, its buffer stays.
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  Backoff backoff;
  for (bool first = true;; first = false) {
    {
      std::lock_guard<std::mutex> calls(call_mutex());
      if (first) MPI_Cancel(&request_);
      int done = 0;
      if (MPI_Test(&request_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
        request_ = MPI_REQUEST_NULL;
        return;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      keep_forever(buffer_);
      return;
    }
    backoff.pause();
  }
}

}  // namespace loom::dist::mpi
