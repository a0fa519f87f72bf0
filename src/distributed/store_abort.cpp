// StoreAbortSignal of store_abort.h: a reason key written before a counter is raised, so a
// rank that sees the counter can always read the reason.
#include "loom/distributed/store_abort.h"

#include <chrono>
#include <exception>

#include "loom/tensor/error.h"

namespace loom::dist {

namespace {
const char* const kReasonKey = "abort/reason";
const char* const kCountKey = "abort/count";
}  // namespace

StoreAbortSignal::StoreAbortSignal(std::shared_ptr<Store> store) : store_(std::move(store)) {}

void StoreAbortSignal::raise(const std::string& who, const std::string& reason) {
  try {
    // add() answers how many raised before: only the first writes its reason.
    if (store_->add("abort/raised", 1) == 1) store_->set(kReasonKey, who + " aborted: " + reason);
    store_->add(kCountKey, 1);
  } catch (const std::exception&) {
    reachable_ = false;
  }
}

std::optional<std::string> StoreAbortSignal::poll() {
  if (!reachable_) return std::nullopt;
  bool raised = false;
  try {
    raised = store_->add(kCountKey, 0) > 0;
    if (!raised) return std::nullopt;
    return store_->get(kReasonKey, std::chrono::seconds(5));
  } catch (const std::exception& e) {
    // The store fails its calls once it knows the job has failed (a rank's connection dropped
    // without a goodbye), or once its server (rank 0) is gone: either way a peer is.
    reachable_ = false;
    return detail::concat(
        raised ? "a rank aborted, but its reason could not be read: " : "the job's store failed: ",
        e.what());
  }
}

}  // namespace loom::dist
