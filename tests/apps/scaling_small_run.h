// The quick loom-scaling configuration the scaling tests start from: thread ranks on the CPU,
// worlds of 1 and 2, batch 4 per rank, one warm-up step and three timed ones.
#pragma once

#include "scaling/scaling.h"

namespace loom::testing {

inline scaling::Config small_cpu_run() {
  scaling::Config c;
  c.placement = scaling::Placement::Cpu;
  c.world_sizes = {1, 2};
  c.batch_per_rank = 4;
  c.steps = 3;
  c.warmup = 1;
  c.warmup_seconds = 0;
  return c;
}

}  // namespace loom::testing
