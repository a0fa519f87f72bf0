// How a program becomes the ranks of a job: dist::spawn runs one thread per rank in this
// process; init_from_environment joins a job whose processes a launcher started (mpirun, srun,
// or anything that sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, as torchrun and Kubernetes
// operators do). Without a launcher a program is a world of one, not an error.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "loom/distributed/process_group.h"

namespace loom::dist {

enum class Backend { Auto, Threads, Nccl, Mpi, Tcp };
const char* backend_name(Backend backend);       // "auto", "threads", "nccl", "mpi", "tcp"
Backend parse_backend(const std::string& name);  // throws naming the accepted names
// Whether this build has the backend (MPI is optional at build time, NCCL comes with CUDA).
bool backend_available(Backend backend);

struct SpawnOptions {
  // Auto: NCCL with rank r on cuda:r for a CUDA device, threads for the CPU. Threads with a CUDA
  // device puts every rank on that one GPU (how one GPU tests the multi-rank rules).
  Backend backend = Backend::Auto;
  GroupOptions group;
  // OpenMP threads of each rank's CPU ops; 0: the process's threads divided among the ranks
  // (at least one), so N ranks do not oversubscribe the cores N times.
  int cpu_threads_per_rank = 0;
};

// The most ranks spawn runs as threads of this process: 8 per core (at least 8), at most 1024,
// and at most a quarter of the threads this process may still start (RLIMIT_NPROC and
// /proc/sys/kernel/threads-max: a rank brings a watchdog and loader threads). Past it the ranks
// only take turns on the cores while each holds its own model, gradients and buffers (1,000 CPU
// ranks of the seed CNN took 10.5 GB), and a limit hit halfway would end a run that had started.
int max_thread_ranks();

// Runs fn(group) for ranks 0..world_size-1, each on its own thread with its own current device,
// its own CUDA stream (ranks that share a GPU run concurrently) and its own default random
// generator, seeded from the caller's seed and the rank (rank 0 keeps the seed itself). If a
// rank throws, the group is aborted (the other ranks' pending and later collectives fail at
// once), every thread is joined, and the first rank's exception reaches the caller as a
// loom::Error naming that rank. Throws before starting anything when the world size is below
// 1, above max_thread_ranks() or above the GPUs present for NCCL; a thread the system refuses
// (a limit lower than it said) fails the ranks already started and throws naming the world size.
void spawn(int world_size, Device device, const std::function<void(ProcessGroup&)>& fn,
           const SpawnOptions& options = {});

// Where this process sits in a job, as its launcher says.
struct LaunchEnvironment {
  std::string launcher = "none";  // "none", "mpirun", "srun", "env" (RANK/WORLD_SIZE)
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // picks the GPU (local_cuda_device)
  int local_world_size = 1;
  std::string master_addr;  // the TCP rendezvous: rank 0 listens there
  int master_port = 0;
};

// Reads Open MPI's (OMPI_COMM_WORLD_*), srun's (SLURM_PROCID, SLURM_STEP_NUM_TASKS,
// SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE, the first host of SLURM_STEP_NODELIST, a port from
// SLURM_JOB_ID) or torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)
// variables, in that order; MASTER_ADDR/MASTER_PORT, when set, name the rendezvous under any
// launcher. Throws naming the variable when a value is malformed.
LaunchEnvironment read_launch_environment();

// The CUDA device index of this process's rank among the `visible` devices it sees:
// local_rank when the node's GPUs are all visible (mpirun, torchrun, srun --gpus-per-node),
// 0 when the launcher bound one GPU to each task (srun --gpus-per-task 1, a CUDA_VISIBLE_DEVICES
// per rank), so that the one GPU a task sees is cuda:0 whatever its local rank. Throws naming
// the rank, the local rank and the count when the GPU it needs is not visible.
int local_cuda_device(const LaunchEnvironment& env, int visible);

// Joins the job this process belongs to and returns its group for tensors on `device`:
//   CPU:  MPI under mpirun when loom was built with MPI, else the TCP backend through the
//         rendezvous store on MASTER_ADDR:MASTER_PORT;
//   CUDA: NCCL on cuda:local_cuda_device(env, visible GPUs) (the device index of `device` is
//         ignored), its unique id sent by MPI or the TCP store. That device becomes the calling
//         thread's current device for good (as torch.cuda.set_device), so that nothing this
//         process does later makes a CUDA context on another rank's GPU.
// `backend` forces one (Auto chooses as above). Without a launcher: a group of one rank.
// Every rank's default random generator is then seeded from its seed and the rank, as spawn
// does, so both launches draw the same numbers.
GroupPtr init_from_environment(Device device = kCPU, const GroupOptions& options = {},
                               Backend backend = Backend::Auto);

// Runs fn(group) as this process's rank of a launched job (init_from_environment's group), so
// that one rank's failure ends the job instead of leaving the others waiting for it: an
// exception leaving fn (or the join) aborts the group with "<who> failed: <what>", which the
// other ranks' collectives fail with at once (TCP and NCCL processes: through the store; MPI:
// through its notices), and is rethrown. Under MPI the process then ends with MPI_Abort at exit
// rather than MPI_Finalize, which would wait for ranks that are not coming, so mpirun stops every
// rank within about a second. What spawn does for thread ranks, for processes.
void run_in_job(Device device, const std::function<void(const GroupPtr&)>& fn,
                const GroupOptions& options = {}, Backend backend = Backend::Auto);

// The backend init_from_environment joins `env`'s job with for `device`: `backend` unless it is
// Auto, else as above (nccl, mpi, tcp, or threads for a world of one).
Backend launch_backend(const LaunchEnvironment& env, Device device,
                       Backend backend = Backend::Auto);

// The group timeout (GroupOptions::timeout) as a user gives it, PyTorch's
// init_process_group(timeout=): seconds, a decimal number in (0, kMaxTimeoutSeconds] ("60",
// "2.5"). `source` names where the text came from in the error ("--dist-timeout").
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;  // a week: beyond it, a typo
constexpr const char* kTimeoutEnv = "LOOM_DIST_TIMEOUT";
std::chrono::milliseconds parse_timeout(const std::string& seconds, const std::string& source);
// `flag` when given (non-empty), else $LOOM_DIST_TIMEOUT when set, else `fallback`; throws
// naming the flag or the variable when the value is not a timeout.
std::chrono::milliseconds resolve_timeout(const std::string& flag, const std::string& flag_name,
                                          std::chrono::milliseconds fallback);

// The seed rank `rank` derives from `seed`: rank 0 keeps it, the others get a mix of both.
uint64_t rank_seed(uint64_t seed, int rank);

}  // namespace loom::dist
