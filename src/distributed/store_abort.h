// An abort that reaches the other processes of a job through its rendezvous store. NCCL's
// ncclCommAbort only ends this process's kernels: peers waiting for it over NVLink would spin
// until their own timeout. So an aborting rank also writes its reason to the store, and every
// rank's watchdog asks the store now and then (PyTorch's ProcessGroupNCCL does the same with its
// NCCLABORTEDCOMM key).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "loom/distributed/store.h"

namespace loom::dist {

class StoreAbortSignal {
 public:
  explicit StoreAbortSignal(std::shared_ptr<Store> store);

  // Tells every rank that `who` aborted for `reason` (the first reason raised is kept). Never
  // throws: a store that cannot be reached any more is one the others cannot read either.
  void raise(const std::string& who, const std::string& reason);
  // Without waiting: "<who> aborted: <reason>" once some rank has raised, else nothing. A store
  // whose calls fail (it knows the job has failed, or its server is gone) is news too, once:
  // some peer is gone; it is not asked again.
  std::optional<std::string> poll();

 private:
  std::shared_ptr<Store> store_;
  std::atomic<bool> reachable_{true};  // raise() and poll() run on different threads
};

}  // namespace loom::dist
