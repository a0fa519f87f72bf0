// init_from_environment: this process's group in a job started by a launcher (launch.h), and
// the names of the backends.
#include <cstring>
#include <mutex>

#include "loom/distributed/launch.h"
#include "loom/distributed/mpi/mpi_group.h"
#include "loom/distributed/nccl_group.h"
#include "loom/distributed/store_group.h"
#include "loom/distributed/tcp_store.h"
#include "loom/distributed/threads_group.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/random.h"

namespace loom::dist {

namespace {

// Keys of one group kept apart from another's on the one store of the process.
class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> store, std::string prefix)
      : store_(std::move(store)), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::string& value) override {
    store_->set(prefix_ + key, value);
  }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return store_->get(prefix_ + key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return store_->add(prefix_ + key, delta);
  }
  void erase(const std::string& key) override { store_->erase(prefix_ + key); }

 private:
  std::shared_ptr<Store> store_;
  std::string prefix_;
};

// The rendezvous store of this process (rank 0 serves it), made on first use: a port can be
// listened on once, and every group of the job shares it under its own prefix. Groups are
// made in the same order on every rank, so the n-th group has the same prefix everywhere.
std::shared_ptr<Store> next_group_store(const LaunchEnvironment& env,
                                        std::chrono::milliseconds timeout) {
  static std::mutex mutex;
  static std::shared_ptr<Store> store;
  static int groups = 0;
  std::lock_guard<std::mutex> lock(mutex);
  LOOM_CHECK(!env.master_addr.empty() && env.master_port > 0, "init_from_environment (",
             env.launcher, "): rank ", env.rank, " of ", env.world_size,
             " needs MASTER_ADDR and MASTER_PORT for the TCP rendezvous");
  if (!store) {
    store = std::make_shared<TcpStore>(env.master_addr, env.master_port, env.rank, env.world_size,
                                       timeout);
  }
  return std::make_shared<PrefixStore>(store, detail::concat("g", groups++, "/"));
}

bool mpi_launched(const LaunchEnvironment& env) { return env.launcher == "mpirun"; }

GroupPtr nccl_from_environment(const LaunchEnvironment& env, const GroupOptions& options) {
  const int device = local_cuda_device(env, cuda_device_count());
  // For good, as torch.cuda.set_device(LOCAL_RANK): a guard would put the thread back on
  // cuda:0, and every later call there would make this process a context on GPU 0.
  cuda::set_device(device);
  if (env.world_size == 1) return make_nccl_group(nccl_unique_id(), 0, 1, device, options);
  NcclId id{};
  if (mpi_launched(env) && backend_available(Backend::Mpi) && env.master_addr.empty()) {
    // Open MPI already joined the processes: its broadcast hands out the id.
    GroupPtr mpi = make_mpi_group(options);
    Tensor bytes = zeros({static_cast<int64_t>(id.size())}, TensorOptions(kUInt8));
    if (env.rank == 0) {
      id = nccl_unique_id();
      std::memcpy(bytes.raw_data(), id.data(), id.size());
    }
    mpi->broadcast(bytes, 0)->wait();
    std::memcpy(id.data(), bytes.raw_data(), id.size());
    return make_nccl_group(id, env.rank, env.world_size, device, options);
  }
  std::shared_ptr<Store> store = next_group_store(env, options.timeout);
  if (env.rank == 0) {
    id = nccl_unique_id();
    store->set("nccl_id", std::string(id.data(), id.size()));
  } else {
    const std::string got = store->get("nccl_id", options.timeout);
    LOOM_CHECK(got.size() == id.size(), "init_from_environment: the NCCL id from the store has ",
               got.size(), " bytes, not ", id.size());
    std::memcpy(id.data(), got.data(), id.size());
  }
  return make_nccl_group(id, env.rank, env.world_size, device, options, nullptr, store);
}

}  // namespace

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::Auto:
      return "auto";
    case Backend::Threads:
      return "threads";
    case Backend::Nccl:
      return "nccl";
    case Backend::Mpi:
      return "mpi";
    case Backend::Tcp:
      return "tcp";
  }
  return "?";
}

Backend parse_backend(const std::string& name) {
  for (Backend b : {Backend::Auto, Backend::Threads, Backend::Nccl, Backend::Mpi, Backend::Tcp}) {
    if (name == backend_name(b)) return b;
  }
  LOOM_FAIL("unknown distributed backend '", name.substr(0, 64),
            "': expected auto, threads, nccl, mpi or tcp");
}

bool backend_available(Backend backend) {
  switch (backend) {
    case Backend::Nccl:
      return built_with_cuda();
    case Backend::Mpi:
#if defined(LOOM_WITH_MPI)
      return true;
#else
      return false;
#endif
    default:
      return true;
  }
}

uint64_t rank_seed(uint64_t seed, int rank) {
  if (rank == 0) return seed;
  // SplitMix64's finaliser over seed and rank: neighbouring ranks get unrelated streams.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Backend launch_backend(const LaunchEnvironment& env, Device device, Backend backend) {
  if (backend != Backend::Auto) return backend;
  if (device.is_cuda()) return Backend::Nccl;
  if (env.world_size == 1) return Backend::Threads;
  return mpi_launched(env) && backend_available(Backend::Mpi) ? Backend::Mpi : Backend::Tcp;
}

GroupPtr init_from_environment(Device device, const GroupOptions& options, Backend backend) {
  const LaunchEnvironment env = read_launch_environment();
  if (env.world_size > 1) {
    Generator& gen = default_generator();
    gen.set_state(rank_seed(gen.seed(), env.rank), gen.offset());
  }
  backend = launch_backend(env, device, backend);
  LOOM_CHECK(backend_available(backend), "init_from_environment: loom was built without the ",
             backend_name(backend), " backend");
  switch (backend) {
    case Backend::Nccl:
      LOOM_CHECK(device.is_cuda(),
                 "init_from_environment: the NCCL backend needs a CUDA device, got ", device.str());
      return nccl_from_environment(env, options);
    case Backend::Mpi: {
      LOOM_CHECK(device.is_cpu(), "init_from_environment: the MPI backend takes CPU tensors, not ",
                 device.str(), " (use nccl)");
      // MPI counts its own ranks; a launcher's environment that says otherwise (RANK=1
      // WORLD_SIZE=2 without mpirun: MPI's singleton world of one) must not train alone.
      GroupPtr group = make_mpi_group(options);
      LOOM_CHECK(
          env.launcher == "none" || (group->size() == env.world_size && group->rank() == env.rank),
          "init_from_environment: MPI says this process is rank ", group->rank(), " of ",
          group->size(), " but its launcher (", env.launcher, ") says rank ", env.rank, " of ",
          env.world_size, "; start MPI jobs with mpirun or srun, others with the ", "tcp backend");
      return group;
    }
    case Backend::Tcp: {
      LOOM_CHECK(device.is_cpu(), "init_from_environment: the TCP backend takes CPU tensors, not ",
                 device.str(), " (use nccl)");
      std::shared_ptr<Store> store = next_group_store(env, options.timeout);
      return make_store_group(store, env.rank, env.world_size, options);
    }
    case Backend::Threads:
      LOOM_CHECK(env.world_size == 1, "init_from_environment: the threads backend runs ranks as ",
                 "threads of one process (dist::spawn); this process is rank ", env.rank, " of ",
                 env.world_size, " started by ", env.launcher);
      return make_threads_groups(1, device, options)[0];
    case Backend::Auto:
      break;
  }
  LOOM_FAIL("init_from_environment: no backend chosen");
}

void run_in_job(Device device, const std::function<void(const GroupPtr&)>& fn,
                const GroupOptions& options, Backend backend) {
  GroupPtr group;
  try {
    group = init_from_environment(device, options, backend);
    fn(group);
  } catch (const std::exception& e) {
    // A rank that could not join leaves the others waiting in theirs just the same.
    if (group) group->abort(detail::concat(group->who(), " failed: ", e.what()));
    end_mpi_job_at_exit();
    throw;
  }
}

}  // namespace loom::dist
