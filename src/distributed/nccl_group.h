// The NCCL backend: one communicator per group, created non-blocking so that a rank that never
// joins is a timeout instead of a hang; collectives run on the group's own communication stream,
// ordered after the caller's stream by an event; a watchdog thread polls NCCL's asynchronous
// errors and every collective's completion and aborts the communicator on error or timeout.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "loom/distributed/process_group.h"
#include "loom/distributed/store.h"

namespace loom::dist {

// NCCL's unique id as bytes (ncclUniqueId, NCCL_UNIQUE_ID_BYTES): one rank makes it, the
// launch hands it to the others (in memory, over MPI or through the TCP store).
using NcclId = std::array<char, 128>;
NcclId nccl_unique_id();

// Joins the communicator named by `id` as `rank` of `size`, on cuda:`device`. Returns once
// every rank has joined; throws loom::Error after options.timeout, or as soon as *cancel turns
// true (spawn sets it when another rank has failed), naming the rank and what it waited for.
// `store`, the job's rendezvous store when the ranks are processes, carries an abort to the
// other processes (store_abort.h), which then fail within ~0.1 s instead of at their timeout;
// the group keeps it alive. Threads of one process need none: spawn aborts every rank's group.
GroupPtr make_nccl_group(const NcclId& id, int rank, int size, int device,
                         const GroupOptions& options = {},
                         const std::atomic<bool>* cancel = nullptr,
                         std::shared_ptr<Store> store = nullptr);

// "2.28.9", the library loom runs with; "none" in a build without CUDA.
std::string nccl_version();

}  // namespace loom::dist
