// Whether every rank of a group holds the same number: the check that lets ranks take one
// decision together (NCCL requires every rank to capture, replay or run eagerly the same
// collectives; train::CapturedStep agrees on each step's batch shape before choosing).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "loom/distributed/process_group.h"

namespace loom::dist {

// Every rank must call it, in the same order as its other collectives. Ranks that are threads
// of one process (dist::spawn) compare through shared memory (SharedMemoryAgreement): a few
// microseconds, and the device is not waited for. Otherwise one all_reduce(min) of four int64
// words on the group's device (the value's halves and their negations: the minimum and the
// maximum over ranks at once), waited for on the host, which waits for the work already queued
// on the stream too. A group of one answers true with neither.
bool all_equal(ProcessGroup& group, uint64_t value);

// The ranks of one process comparing numbers through memory they share: a reusable barrier that
// hands every rank whether all the values of its round were equal. spawn makes one per job and
// gives it to every rank's group (ProcessGroup::share_memory_with_ranks).
class SharedMemoryAgreement {
 public:
  explicit SharedMemoryAgreement(int world_size);
  // Blocks until every rank has given its value for this round; throws a loom::Error naming the
  // group when it is aborted (a rank that failed never arrives) or the timeout passes first.
  bool all_equal(const ProcessGroup& group, uint64_t value);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<uint64_t> values_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  bool equal_ = true;  // the answer of the last finished round
};

}  // namespace loom::dist
