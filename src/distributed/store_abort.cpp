// StoreAbortSignal of store_abort.h: a reason key written before a counter is raised, so a
// rank that sees the counter can always read the reason.
#include "loom/distributed/store_abort.h"

#include <chrono>
#include <exception>

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
  try {
    if (store_->add(kCountKey, 0) == 0) return std::nullopt;
    return store_->get(kReasonKey, std::chrono::seconds(5));
  } catch (const std::exception&) {
    reachable_ = false;
    return std::nullopt;
  }
}

}  // namespace loom::dist
