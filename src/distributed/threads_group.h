// The threads backend: the ranks are threads of one process and meet in shared memory. CPU
// tensors are reduced by the last rank to arrive; CUDA tensors of ranks that share one GPU are
// reduced on that GPU, on a communication stream ordered after every rank's stream by events,
// exactly as a real backend orders itself. This is how CI and a one-GPU machine test every
// multi-rank rule.
#pragma once

#include <vector>

#include "loom/distributed/process_group.h"

namespace loom::dist {

// The groups of `size` ranks, all on `device` (the CPU, or one CUDA device they share); give
// group r to the thread of rank r. Collectives are always compared across ranks (for free).
std::vector<GroupPtr> make_threads_groups(int size, Device device,
                                          const GroupOptions& options = {});

}  // namespace loom::dist
