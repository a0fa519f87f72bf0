// The "tcp" backend: collectives of CPU tensors between processes, carried by a Store (the
// job's TcpStore). Each rank sets its part of a collective under a key of its own and reads the
// others'; every rank folds them in rank order, so all get bit-identical results.
#pragma once

#include <memory>

#include "loom/distributed/process_group.h"
#include "loom/distributed/store.h"

namespace loom::dist {

// Rank `rank` of a group of `size` whose collectives go through `store`. Each call takes its own
// namespace of the store (a per-rank count of the groups made on it), so every rank must make
// its groups in the same order, as it must call their collectives in the same order.
// A collective's parts wait at most until its deadline (options.timeout); a rank that aborts
// leaves a note in the store that fails the others' next wait for it, naming it and its reason.
GroupPtr make_store_group(std::shared_ptr<Store> store, int rank, int size,
                          const GroupOptions& options = {});

}  // namespace loom::dist
