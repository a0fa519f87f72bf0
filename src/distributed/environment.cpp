// read_launch_environment: the variables that Open MPI, Slurm and torchrun-style launchers set;
// local_cuda_device: the GPU of a rank among those its launcher left visible.
#include <cmath>
#include <cstdlib>
#include <string>

#include "loom/distributed/launch.h"

namespace loom::dist {

namespace {

const char* variable(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int parse_int(const char* name, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  LOOM_CHECK(end != text && *end == '\0' && value >= 0 && value <= (1 << 30), "launch: ", name,
             " must be a non-negative integer, got '", std::string(text).substr(0, 64), "'");
  return static_cast<int>(value);
}

// The integer in `name`, or `fallback` when it is unset.
int int_variable(const char* name, int fallback) {
  const char* v = variable(name);
  return v ? parse_int(name, v) : fallback;
}

// Slurm's compressed host list ("node[03-04,07],gpu5") -> its first host ("node03").
std::string first_host(const std::string& list) {
  int depth = 0;
  size_t end = 0;
  for (; end < list.size(); ++end) {
    if (list[end] == '[') ++depth;
    if (list[end] == ']') --depth;
    if (list[end] == ',' && depth == 0) break;
  }
  const std::string host = list.substr(0, end);
  const size_t open = host.find('[');
  if (open == std::string::npos) return host;
  const size_t close = host.find(']', open);
  LOOM_CHECK(close != std::string::npos, "launch: SLURM_STEP_NODELIST '", list.substr(0, 64),
             "' has an unclosed '['");
  const std::string inside = host.substr(open + 1, close - open - 1);
  const std::string first = inside.substr(0, inside.find_first_of(",-"));
  return host.substr(0, open) + first + host.substr(close + 1);
}

// Slurm's "4(x2),3" -> 4: the tasks on this job's first node, a fair local size.
int leading_int(const char* name, const char* text) {
  std::string digits;
  for (const char* p = text; *p >= '0' && *p <= '9'; ++p) digits += *p;
  return parse_int(name, digits.empty() ? text : digits.c_str());
}

void check_consistent(const LaunchEnvironment& env) {
  LOOM_CHECK(env.world_size >= 1, "launch (", env.launcher,
             "): the world size must be at least 1, got ", env.world_size);
  LOOM_CHECK(env.rank < env.world_size, "launch (", env.launcher, "): rank ", env.rank,
             " is not below the world size ", env.world_size);
  LOOM_CHECK(env.local_rank < env.local_world_size || env.local_world_size == 0, "launch (",
             env.launcher, "): local rank ", env.local_rank, " is not below the local world size ",
             env.local_world_size);
}

}  // namespace

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment env;
  if (variable("OMPI_COMM_WORLD_SIZE")) {
    env.launcher = "mpirun";
    env.world_size = int_variable("OMPI_COMM_WORLD_SIZE", 1);
    env.rank = int_variable("OMPI_COMM_WORLD_RANK", 0);
    env.local_rank = int_variable("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    env.local_world_size = int_variable("OMPI_COMM_WORLD_LOCAL_SIZE", env.world_size);
  } else if (variable("SLURM_STEP_NUM_TASKS")) {
    // Only srun sets the step's task count: a batch script's own shell is not a rank.
    env.launcher = "srun";
    env.world_size = int_variable("SLURM_STEP_NUM_TASKS", 1);
    env.rank = int_variable("SLURM_PROCID", 0);
    env.local_rank = int_variable("SLURM_LOCALID", 0);
    const char* per_node = variable("SLURM_STEP_TASKS_PER_NODE");
    env.local_world_size =
        per_node ? leading_int("SLURM_STEP_TASKS_PER_NODE", per_node) : env.world_size;
    if (const char* nodes = variable("SLURM_STEP_NODELIST")) env.master_addr = first_host(nodes);
    // One port per job, so two jobs sharing a node do not meet.
    env.master_port = 20000 + int_variable("SLURM_JOB_ID", 0) % 20000;
  } else if (variable("RANK") || variable("WORLD_SIZE")) {
    LOOM_CHECK(variable("RANK") && variable("WORLD_SIZE"),
               "launch: RANK and WORLD_SIZE must be set together (only ",
               variable("RANK") ? "RANK" : "WORLD_SIZE", " is)");
    env.launcher = "env";
    env.world_size = int_variable("WORLD_SIZE", 1);
    env.rank = int_variable("RANK", 0);
    env.local_rank = int_variable("LOCAL_RANK", env.rank);
    env.local_world_size = int_variable("LOCAL_WORLD_SIZE", env.world_size);
    env.master_addr = "127.0.0.1";
    env.master_port = 29500;
  }
  if (const char* addr = variable("MASTER_ADDR")) env.master_addr = addr;
  if (variable("MASTER_PORT")) {
    env.master_port = int_variable("MASTER_PORT", 0);
    LOOM_CHECK(env.master_port >= 1 && env.master_port <= 65535,
               "launch: MASTER_PORT must be a port number in [1, 65535], got ", env.master_port);
  }
  check_consistent(env);
  return env;
}

int local_cuda_device(const LaunchEnvironment& env, int visible) {
  LOOM_CHECK(visible >= 1, "launch (", env.launcher, "): rank ", env.rank, " (local rank ",
             env.local_rank, ") needs a GPU, but no CUDA device is visible");
  if (visible == 1) return 0;  // the launcher gave this task its own GPU
  LOOM_CHECK(env.local_rank < visible, "launch (", env.launcher, "): rank ", env.rank,
             " is local rank ", env.local_rank, " of ", env.local_world_size,
             " on its node, which needs cuda:", env.local_rank, ", but ", visible,
             " CUDA devices are visible; give each task one GPU (srun --gpus-per-task 1) or "
             "every task all of the node's");
  return env.local_rank;
}

std::chrono::milliseconds parse_timeout(const std::string& seconds, const std::string& source) {
  const char* text = seconds.c_str();
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  const bool number = end != text && *end == '\0' && std::isfinite(value);
  // Below a millisecond rounds to no timeout at all.
  LOOM_CHECK(number && value >= 0.001 && value <= kMaxTimeoutSeconds, source,
             " must be a number of seconds between 0.001 and ", kMaxTimeoutSeconds,
             " (a week), got '", seconds.substr(0, 64), "'");
  return std::chrono::milliseconds(std::llround(value * 1000.0));
}

std::chrono::milliseconds resolve_timeout(const std::string& flag, const std::string& flag_name,
                                          std::chrono::milliseconds fallback) {
  if (!flag.empty()) return parse_timeout(flag, flag_name);
  const char* env = variable(kTimeoutEnv);
  return env ? parse_timeout(env, kTimeoutEnv) : fallback;
}

}  // namespace loom::dist
