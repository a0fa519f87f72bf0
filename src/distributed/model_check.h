// The checks DistributedDataParallel makes at construction: every rank holds the same
// parameters (names, shapes, dtypes) as rank 0, and then rank 0's values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loom/distributed/process_group.h"

namespace loom::dist {

using NamedList = std::vector<std::pair<std::string, Tensor>>;

// Throws on every rank (each sees every rank's description) when some rank's list differs
// from rank 0's, naming the first difference and the two ranks. `what` is "parameter" or
// "buffer". Costs two small all-gathers (a third one, of the descriptions, only on a mismatch).
void check_same_across_ranks(ProcessGroup& group, const NamedList& tensors, const char* what);

// Sets every tensor to rank 0's value, waiting until it has arrived.
void broadcast_from_rank0(ProcessGroup& group, const NamedList& tensors);

}  // namespace loom::dist
