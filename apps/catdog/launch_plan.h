// How `loom-catdog train` becomes ranks: alone, as one thread per rank in this process (--gpus N
// over NCCL, --world-size N on any device), or as one rank of a job that mpirun, srun or a
// RANK/WORLD_SIZE launcher started. Every flag combination is checked here, before any data is
// read or any file written.
#pragma once

#include <functional>
#include <string>

#include "commands.h"

namespace loom::catdog {

struct LaunchPlan {
  enum class How { Alone, Threads, Launcher };
  How how = How::Alone;
  int world_size = 1;
  int rank = 0;  // this process's rank under a launcher; 0 otherwise (this process prints)
  // Alone: the device. Threads: the first rank's (NCCL puts rank r on cuda:r; the threads
  // backend puts every rank on this one). Launcher: CPU or CUDA (NCCL on cuda:local_rank).
  Device device = kCPU;
  dist::Backend backend = dist::Backend::Auto;
  dist::GroupOptions group;  // the timeout of --dist-timeout or LOOM_DIST_TIMEOUT
  bool prints() const { return rank == 0; }
  // "world size 2 (threads)", for the header line.
  std::string describe() const;
};

// Throws a loom::Error naming the flags and values that do not fit together or this machine.
LaunchPlan plan_launch(const TrainArgs& args);

// Calls fn once per rank of the plan (on the rank's thread for Threads) with its process group;
// null for a rank alone.
void run_ranks(const LaunchPlan& plan, const std::function<void(const dist::GroupPtr&)>& fn);

}  // namespace loom::catdog
