// Reading the launchers' variables, a program without a launcher being a world of one, and the
// GPU a launched rank takes.
#include <gtest/gtest.h>

#include <cstdlib>

#include "collective_cases.h"
#include "testing.h"

namespace loom::testing {
namespace {

// Sets variables for one test and removes every launcher variable before and after it.
class Environment : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  static void clear() {
    for (const char* name :
         {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
          "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID",
          "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_JOB_ID", "RANK", "WORLD_SIZE",
          "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
      unsetenv(name);
    }
  }
};

TEST_F(Environment, NoLauncherIsAWorldOfOne) {
  const dist::LaunchEnvironment env = dist::read_launch_environment();
  EXPECT_EQ(env.launcher, "none");
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.rank, 0);
  dist::GroupPtr g = dist::init_from_environment();
  EXPECT_EQ(g->size(), 1);
  check_all_collectives(*g, kFloat32, 5);
}

TEST_F(Environment, OpenMpiVariables) {
  set("OMPI_COMM_WORLD_SIZE", "8");
  set("OMPI_COMM_WORLD_RANK", "5");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
  const dist::LaunchEnvironment env = dist::read_launch_environment();
  EXPECT_EQ(env.launcher, "mpirun");
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_TRUE(env.master_addr.empty());
}

TEST_F(Environment, SlurmVariablesAndTheFirstHostOfTheNodeList) {
  set("SLURM_STEP_NUM_TASKS", "16");
  set("SLURM_PROCID", "9");
  set("SLURM_LOCALID", "1");
  set("SLURM_STEP_TASKS_PER_NODE", "8(x2)");
  set("SLURM_STEP_NODELIST", "gpu-node[07-08,11],login2");
  set("SLURM_JOB_ID", "123456");
  dist::LaunchEnvironment env = dist::read_launch_environment();
  EXPECT_EQ(env.launcher, "srun");
  EXPECT_EQ(env.world_size, 16);
  EXPECT_EQ(env.rank, 9);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 8);
  EXPECT_EQ(env.master_addr, "gpu-node07");
  EXPECT_EQ(env.master_port, 20000 + 123456 % 20000);
  set("SLURM_STEP_NODELIST", "alpha,beta");
  EXPECT_EQ(dist::read_launch_environment().master_addr, "alpha");
  set("MASTER_ADDR", "10.0.0.2");
  set("MASTER_PORT", "12345");
  env = dist::read_launch_environment();
  EXPECT_EQ(env.master_addr, "10.0.0.2");
  EXPECT_EQ(env.master_port, 12345);
}

TEST_F(Environment, TorchrunVariables) {
  set("RANK", "3");
  set("WORLD_SIZE", "4");
  set("LOCAL_RANK", "1");
  set("MASTER_ADDR", "node0");
  set("MASTER_PORT", "29501");
  const dist::LaunchEnvironment env = dist::read_launch_environment();
  EXPECT_EQ(env.launcher, "env");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.master_addr, "node0");
  EXPECT_EQ(env.master_port, 29501);
}

TEST_F(Environment, MalformedValuesNameTheVariable) {
  set("RANK", "two");
  set("WORLD_SIZE", "4");
  EXPECT_LOOM_ERROR(dist::read_launch_environment(),
                    "RANK must be a non-negative integer, got 'two'");
  set("RANK", "4");
  EXPECT_LOOM_ERROR(dist::read_launch_environment(), "rank 4 is not below the world size 4");
  set("RANK", "1");
  set("MASTER_PORT", "70000");
  EXPECT_LOOM_ERROR(dist::read_launch_environment(), "MASTER_PORT must be a port number");
  unsetenv("MASTER_PORT");
  unsetenv("WORLD_SIZE");
  EXPECT_LOOM_ERROR(dist::read_launch_environment(), "RANK and WORLD_SIZE must be set together");
  set("WORLD_SIZE", "0");
  set("RANK", "0");
  EXPECT_LOOM_ERROR(dist::read_launch_environment(), "world size must be at least 1, got 0");
}

TEST_F(Environment, TheThreadsBackendCannotJoinALaunchedJob) {
  set("RANK", "0");
  set("WORLD_SIZE", "2");
  EXPECT_LOOM_ERROR(dist::init_from_environment(kCPU, {}, dist::Backend::Threads), "dist::spawn");
}

// srun --gpus-per-task 1 leaves each task one GPU, cuda:0, whatever its SLURM_LOCALID;
// mpirun, torchrun and srun --gpus-per-node leave every GPU of the node visible.
TEST(LocalCudaDevice, TheLocalRankUnlessTheLauncherBoundOneGpuPerTask) {
  dist::LaunchEnvironment env;
  env.launcher = "srun";
  env.rank = 13;
  env.world_size = 16;
  env.local_rank = 5;
  env.local_world_size = 8;
  EXPECT_EQ(dist::local_cuda_device(env, 8), 5);
  EXPECT_EQ(dist::local_cuda_device(env, 1), 0);
  EXPECT_LOOM_ERROR(dist::local_cuda_device(env, 4),
                    "launch (srun): rank 13 is local rank 5 of 8 on its node, which needs cuda:5, "
                    "but 4 CUDA devices are visible; give each task one GPU");
  EXPECT_LOOM_ERROR(dist::local_cuda_device(env, 0),
                    "rank 13 (local rank 5) needs a GPU, but no CUDA device is visible");
  env.local_rank = 0;
  EXPECT_EQ(dist::local_cuda_device(env, 4), 0);
}

TEST(LaunchBackend, AutoIsNcclForGpusAndMpiOrTcpForCpus) {
  dist::LaunchEnvironment env;
  env.launcher = "srun";
  env.world_size = 2;
  EXPECT_EQ(dist::launch_backend(env, kCPU), dist::Backend::Tcp);
  EXPECT_EQ(dist::launch_backend(env, kCUDA), dist::Backend::Nccl);
  EXPECT_EQ(dist::launch_backend(env, kCPU, dist::Backend::Mpi), dist::Backend::Mpi);
  env.launcher = "mpirun";
  EXPECT_EQ(dist::launch_backend(env, kCPU),
            dist::backend_available(dist::Backend::Mpi) ? dist::Backend::Mpi : dist::Backend::Tcp);
  env.world_size = 1;
  EXPECT_EQ(dist::launch_backend(env, kCPU), dist::Backend::Threads);
}

TEST(Backends, NamesRoundTripAndUnknownNamesAreErrors) {
  for (dist::Backend b : {dist::Backend::Auto, dist::Backend::Threads, dist::Backend::Nccl,
                          dist::Backend::Mpi, dist::Backend::Tcp}) {
    EXPECT_EQ(dist::parse_backend(dist::backend_name(b)), b);
  }
  EXPECT_LOOM_ERROR(dist::parse_backend("gloo"), "unknown distributed backend 'gloo'");
  EXPECT_TRUE(dist::backend_available(dist::Backend::Threads));
  EXPECT_EQ(dist::backend_available(dist::Backend::Nccl), built_with_cuda());
}

}  // namespace
}  // namespace loom::testing
