// Whether every rank of a group holds the same number: the check that lets ranks take one
// decision together (NCCL requires every rank to capture, replay or run eagerly the same
// collectives; train::CapturedStep agrees on each step's batch shape before choosing).
#pragma once

#include <cstdint>

#include "loom/distributed/process_group.h"

namespace loom::dist {

// Every rank must call it, in the same order as its other collectives. One all_reduce(min) of
// four int64 words on the group's device (the value's halves and their negations: the minimum
// and the maximum over ranks at once), waited for on the host. A group of one answers true with
// no collective.
bool all_equal(ProcessGroup& group, uint64_t value);

}  // namespace loom::dist
