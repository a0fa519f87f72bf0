// The checks of --gpus, --world-size, --backend and --device against each other, the launcher's
// environment and the GPUs present, and the launch itself.
#include "launch_plan.h"

namespace loom::catdog {

namespace {

dist::Backend backend_of(const std::string& name) {
  try {
    return dist::parse_backend(name);
  } catch (const Error& e) {
    throw Error(std::string("--backend: ") + e.what());
  }
}

// --gpus N: rank r on cuda:r over NCCL.
LaunchPlan gpus_plan(const TrainArgs& a, int gpus, dist::Backend backend) {
  LOOM_CHECK(gpus >= 1, "--gpus must be at least 1, got ", gpus);
  LOOM_CHECK(a.device.empty() || a.device == "cuda", "--gpus ", gpus, " trains on ",
             gpus == 1 ? std::string("cuda:0") : "cuda:0..cuda:" + std::to_string(gpus - 1),
             " but --device is ", a.device,
             a.device == "cpu" ? "; for ranks on the CPU use --world-size" : "");
  LOOM_CHECK(!a.world_size || *a.world_size == gpus, "--gpus ", gpus, " and --world-size ",
             *a.world_size, " disagree: one rank runs per GPU");
  LOOM_CHECK(backend == dist::Backend::Auto || backend == dist::Backend::Nccl,
             "--gpus runs one rank per GPU over nccl, not ", dist::backend_name(backend),
             " (ranks sharing one GPU: --world-size N --backend threads)");
  const int present = cuda_device_count();
  LOOM_CHECK(gpus <= present, "--gpus ", gpus, ": this machine has ", present, " GPU",
             present == 1 ? "" : "s",
             built_with_cuda() ? "" : " (this loom-catdog was built without CUDA)");
  LaunchPlan p;
  p.how = gpus > 1 ? LaunchPlan::How::Threads : LaunchPlan::How::Alone;
  p.world_size = gpus;
  p.device = cuda_device(0);
  p.backend = dist::Backend::Nccl;
  return p;
}

// --world-size N: thread ranks on --device.
LaunchPlan threads_plan(const TrainArgs& a, int world, dist::Backend backend) {
  LOOM_CHECK(world >= 1, "--world-size must be at least 1, got ", world);
  LOOM_CHECK(backend != dist::Backend::Mpi && backend != dist::Backend::Tcp, "--backend ",
             dist::backend_name(backend),
             " joins processes that mpirun, srun or torchrun started; --world-size ", world,
             " runs thread ranks (--backend threads or nccl)");
  LaunchPlan p;
  p.device = parse_device(a.device);
  p.world_size = world;
  p.how = world > 1 ? LaunchPlan::How::Threads : LaunchPlan::How::Alone;
  const int most = dist::max_thread_ranks();
  const bool nccl = p.device.is_cuda() && backend != dist::Backend::Threads;
  LOOM_CHECK(nccl || world <= most, "--world-size ", world,
             ": more thread ranks than this machine can hold (at most ", most,
             ", 8 per core); start processes with mpirun, srun or torchrun for more");
  if (p.device.is_cpu()) {
    LOOM_CHECK(backend != dist::Backend::Nccl, "--backend nccl needs --device cuda, not cpu");
    p.backend = dist::Backend::Threads;
    return p;
  }
  const int present = cuda_device_count();
  if (backend == dist::Backend::Threads) {
    p.backend = backend;  // every rank on this one GPU, as asked
    return p;
  }
  LOOM_CHECK(world <= present, "--world-size ", world, " on ", a.device.empty() ? "cuda" : a.device,
             ": this machine has ", present, " GPU", present == 1 ? "" : "s",
             " and NCCL needs one per rank; ",
             "add --backend threads to run the ranks on one shared GPU");
  LOOM_CHECK(world == 1 || p.device.index == 0, "--world-size ", world,
             " over nccl puts rank r on cuda:r; --device ", a.device,
             " would skip GPUs (use --device cuda)");
  p.backend = dist::Backend::Nccl;
  return p;
}

// One rank of a launcher's job.
LaunchPlan launcher_plan(const TrainArgs& a, const dist::LaunchEnvironment& env,
                         dist::Backend backend) {
  const std::string job = std::to_string(env.world_size) + " ranks (" + env.launcher + ")";
  LOOM_CHECK(!a.world_size || *a.world_size == env.world_size, "--world-size ", *a.world_size,
             " but the launcher started ", job);
  LOOM_CHECK(!a.gpus || *a.gpus == env.world_size, "--gpus ", *a.gpus, " but the launcher started ",
             job);
  LOOM_CHECK(backend != dist::Backend::Threads,
             "--backend threads runs ranks as threads of one process, but the launcher started ",
             job, " as processes (use auto, nccl, mpi or tcp)");
  // MPI takes its ranks from mpirun or srun, not from RANK/WORLD_SIZE: started otherwise, it is
  // a world of one, which would train alone on all the data as "rank 1 of 2".
  LOOM_CHECK(backend != dist::Backend::Mpi || env.launcher != "env", "--backend mpi: MPI's ranks ",
             "come from mpirun or srun, but this process was started as rank ", env.rank, " of ",
             job, " by RANK/WORLD_SIZE variables without them (a world of one to MPI); use ",
             "--backend tcp (or auto) there, or start the job with mpirun");
  LaunchPlan p;
  p.how = LaunchPlan::How::Launcher;
  p.world_size = env.world_size;
  p.rank = env.rank;
  // A rank's GPU is cuda:local_rank, which this process may not have as --device's index.
  p.device = a.gpus || a.device.rfind("cuda", 0) == 0 || (a.device.empty() && cuda_is_available())
                 ? cuda_device(0)
                 : kCPU;
  LOOM_CHECK(!a.gpus || a.device.empty() || a.device == "cuda", "--gpus with --device ", a.device,
             ": --gpus trains on GPUs");
  p.backend = dist::launch_backend(env, p.device, backend);  // the header names the one used
  return p;
}

}  // namespace

std::string LaunchPlan::describe() const {
  if (how == How::Alone) return "world size 1";
  return "world size " + std::to_string(world_size) + " (" +
         (how == How::Launcher ? std::string("launched, ") : std::string("threads, ")) +
         dist::backend_name(backend) + ")";
}

namespace {

LaunchPlan plan_ranks(const TrainArgs& args) {
  const dist::Backend backend = backend_of(args.backend);
  const dist::LaunchEnvironment env = dist::read_launch_environment();
  // A launcher's job of one rank (an srun allocation of one task) is a run alone.
  if (env.launcher != "none" && env.world_size > 1) return launcher_plan(args, env, backend);
  if (args.gpus) return gpus_plan(args, *args.gpus, backend);
  if (args.world_size) return threads_plan(args, *args.world_size, backend);
  LOOM_CHECK(backend == dist::Backend::Auto, "--backend ", args.backend,
             ": one rank has no backend; add --world-size N or --gpus N, or start processes with "
             "mpirun, srun or torchrun");
  LaunchPlan p;
  p.device = parse_device(args.device);
  return p;
}

}  // namespace

LaunchPlan plan_launch(const TrainArgs& args) {
  LaunchPlan p = plan_ranks(args);
  p.group.timeout = dist::resolve_timeout(args.dist_timeout, "--dist-timeout", p.group.timeout);
  return p;
}

void run_ranks(const LaunchPlan& plan, const std::function<void(const dist::GroupPtr&)>& fn) {
  switch (plan.how) {
    case LaunchPlan::How::Alone:
      fn(nullptr);
      return;
    case LaunchPlan::How::Threads: {
      dist::SpawnOptions options;
      options.backend = plan.backend;
      options.group = plan.group;
      dist::spawn(
          plan.world_size, plan.device, [&](dist::ProcessGroup& g) { fn(g.shared_from_this()); },
          options);
      return;
    }
    case LaunchPlan::How::Launcher:
      dist::run_in_job(plan.device, fn, plan.group, plan.backend);
      return;
  }
}

}  // namespace loom::catdog
