// all_equal and SharedMemoryAgreement of agreement.h.
#include "loom/distributed/agreement.h"

#include <algorithm>

namespace loom::dist {

namespace {

bool all_equal_on_device(ProcessGroup& group, uint64_t value) {
  // 32-bit halves, so that negating them cannot overflow.
  const auto low = static_cast<int64_t>(value & 0xffffffffu),
             high = static_cast<int64_t>(value >> 32);
  Tensor words = from_vector(std::vector<int64_t>{low, high, -low, -high}).to(group.device());
  group.all_reduce(words, ReduceOp::Min)->wait();
  const std::vector<int64_t> m = words.cpu().to_vector<int64_t>();
  // min(x) == max(x) for both halves: max(x) is -min(-x).
  return m[0] == -m[2] && m[1] == -m[3];
}

}  // namespace

bool all_equal(ProcessGroup& group, uint64_t value) {
  if (group.size() == 1) return true;
  if (SharedMemoryAgreement* shared = group.shared_memory()) return shared->all_equal(group, value);
  return all_equal_on_device(group, value);
}

SharedMemoryAgreement::SharedMemoryAgreement(int world_size)
    : values_(static_cast<size_t>(world_size)) {}

bool SharedMemoryAgreement::all_equal(const ProcessGroup& group, uint64_t value) {
  std::unique_lock<std::mutex> lock(mutex_);
  LOOM_ASSERT(static_cast<size_t>(group.size()) == values_.size());
  values_[static_cast<size_t>(group.rank())] = value;
  const uint64_t round = round_;
  if (++arrived_ == group.size()) {
    equal_ =
        std::all_of(values_.begin(), values_.end(), [&](uint64_t v) { return v == values_[0]; });
    arrived_ = 0;
    ++round_;
    changed_.notify_all();
    return equal_;
  }
  // A round cannot finish again before this rank arrives for the next one, so equal_ is still
  // this round's answer when the wait ends.
  const auto deadline = std::chrono::steady_clock::now() + group.options().timeout;
  while (round_ == round) {
    if (group.is_aborted()) {
      throw Error(detail::concat("loom.dist: ", group.who(),
                                 ": agreeing with the other ranks failed: the group was "
                                 "aborted: ",
                                 group.abort_reason()));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(detail::concat("loom.dist: ", group.who(),
                                 ": agreeing with the other ranks timed out (the "
                                 "group's timeout): a rank never arrived"));
    }
    // Woken by the last rank to arrive; the bound keeps the abort and deadline checks going.
    changed_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return equal_;
}

}  // namespace loom::dist
