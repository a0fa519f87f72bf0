// dist::spawn: one thread per rank in this process (see launch.h).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>

#include "loom/distributed/agreement.h"
#include "loom/distributed/launch.h"
#include "loom/distributed/nccl_group.h"
#include "loom/distributed/threads_group.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/random.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace loom::dist {

namespace {

// The first failure of any rank, and the groups to abort when it happens.
class SpawnState {
 public:
  explicit SpawnState(int world_size) : groups_(static_cast<size_t>(world_size)) {}

  // A rank's group while it runs (null once it is done), so a failure elsewhere can abort it.
  void set_group(int rank, GroupPtr group) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_ && group) group->abort(reason_);
    groups_[static_cast<size_t>(rank)] = std::move(group);
  }

  void fail(int rank, const std::string& what) {
    std::vector<GroupPtr> groups;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed_) return;
      failed_ = true;
      first_rank_ = rank;
      first_what_ = what;
      reason_ = detail::concat("rank ", rank, " failed: ", what);
      groups = groups_;
      cancel_ = true;
    }
    for (const GroupPtr& g : groups) {
      if (g) g->abort(reason_);
    }
  }

  const std::atomic<bool>* cancel() const { return &cancel_; }

  void rethrow_first() {
    if (!failed_) return;
    throw Error(detail::concat("loom.dist.spawn: rank ", first_rank_, " failed: ", first_what_));
  }

 private:
  std::mutex mutex_;
  std::vector<GroupPtr> groups_;
  bool failed_ = false;
  int first_rank_ = -1;
  std::string first_what_, reason_;
  std::atomic<bool> cancel_{false};
};

// A rank's own CUDA stream, drained and destroyed when the rank is done.
struct StreamOwner {
  int device;
  cuda::StreamHandle handle;
  explicit StreamOwner(int index) : device(index), handle(cuda::create_stream(index)) {}
  ~StreamOwner() {
    try {
      cuda::synchronize_stream(handle);
      cuda::destroy_stream(device, handle);
    } catch (const Error&) {
      // The rank's own error, if any, has already been recorded.
    }
  }
  StreamOwner(const StreamOwner&) = delete;
  StreamOwner& operator=(const StreamOwner&) = delete;
};

Backend resolve(Backend backend, Device device) {
  if (backend == Backend::Auto) return device.is_cuda() ? Backend::Nccl : Backend::Threads;
  LOOM_CHECK(backend == Backend::Threads || backend == Backend::Nccl,
             "spawn: ranks are threads, so ", "the backend must be threads or nccl, not ",
             backend_name(backend), " (start processes with mpirun or torchrun for that)");
  LOOM_CHECK(backend != Backend::Nccl || device.is_cuda(),
             "spawn: the NCCL backend needs a CUDA device, got ", device.str());
  return backend;
}

int threads_per_rank(const SpawnOptions& options, int world_size) {
  if (options.cpu_threads_per_rank > 0) return options.cpu_threads_per_rank;
#if defined(_OPENMP)
  return std::max(1, omp_get_max_threads() / world_size);
#else
  (void)world_size;
  return 1;
#endif
}

// How many more threads this process may start, as far as the system says (a large number
// when it says nothing).
long thread_room() {
  long room = 1L << 30;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NPROC, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    room = std::min(room, static_cast<long>(limit.rlim_cur));
  std::ifstream max_file("/proc/sys/kernel/threads-max");
  long threads_max = 0;
  if (max_file >> threads_max && threads_max > 0) room = std::min(room, threads_max);
  return room;
}

}  // namespace

int max_thread_ranks() {
  constexpr int kMost = 1024;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const long by_threads = std::max(1L, thread_room() / 4);
  return static_cast<int>(std::min<long>({kMost, std::max(8, 8 * cores), by_threads}));
}

void spawn(int world_size, Device device, const std::function<void(ProcessGroup&)>& fn,
           const SpawnOptions& options) {
  LOOM_CHECK(world_size >= 1, "spawn: the world size must be at least 1, got ", world_size);
  const int most = max_thread_ranks();
  LOOM_CHECK(world_size <= most, "spawn: a world size of ", world_size,
             " is more thread ranks than this machine can hold: at most ", most, " (8 per core of ",
             std::max(1u, std::thread::hardware_concurrency()),
             ", at most 1024, a quarter of the thread limit); start processes for more");
  const Backend backend = resolve(options.backend, device);
  if (device.is_cuda()) {
    LOOM_CHECK(built_with_cuda(), "spawn: ", device.str(),
               " asked for, but loom was built without CUDA");
    const int needed = backend == Backend::Nccl ? world_size : device.index + 1;
    LOOM_CHECK(
        needed <= cuda_device_count(), "spawn: ", world_size, " ranks over ", backend_name(backend),
        " need ", needed, " GPUs but ", cuda_device_count(), " are visible",
        backend == Backend::Nccl ? " (the threads backend puts several ranks on one GPU)" : "");
  }

  SpawnState state(world_size);
  auto shared_memory = std::make_shared<SharedMemoryAgreement>(world_size);
  std::vector<GroupPtr> thread_groups;
  NcclId nccl_id{};
  if (backend == Backend::Threads) {
    thread_groups = make_threads_groups(world_size, device, options.group);
    for (int r = 0; r < world_size; ++r) {
      thread_groups[static_cast<size_t>(r)]->share_memory_with_ranks(shared_memory);
      state.set_group(r, thread_groups[static_cast<size_t>(r)]);
    }
  } else {
    cuda::DeviceGuard guard(0);
    nccl_id = nccl_unique_id();
  }
  const uint64_t seed = default_generator().seed();
  const int omp_threads = threads_per_rank(options, world_size);

  auto run_rank = [&](int rank) {
    GroupPtr group;
    try {
      Generator generator(rank_seed(seed, rank));
      GeneratorGuard generator_guard(generator);
#if defined(_OPENMP)
      omp_set_num_threads(omp_threads);
#endif
      if (device.is_cuda()) {
        const int index = backend == Backend::Nccl ? rank : device.index;
        cuda::DeviceGuard device_guard(index);
        // Each rank its own compute stream, so ranks sharing a GPU run side by side.
        StreamOwner stream(index);
        cuda::StreamGuard stream_guard(index, stream.handle);
        if (backend == Backend::Threads) {
          group = thread_groups[static_cast<size_t>(rank)];
        } else {
          group = make_nccl_group(nccl_id, rank, world_size, index, options.group, state.cancel());
          group->share_memory_with_ranks(shared_memory);
          state.set_group(rank, group);
        }
        fn(*group);
        cuda::synchronize_stream(stream.handle);
      } else {
        group = thread_groups[static_cast<size_t>(rank)];
        fn(*group);
      }
    } catch (const std::exception& e) {
      state.fail(rank, e.what());
    } catch (...) {
      state.fail(rank, "an exception that is not a std::exception");
    }
    // A communicator is torn down on its own rank's thread, beside the others' (NCCL's
    // finalisation may need every rank at once).
    state.set_group(rank, nullptr);
    group.reset();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(world_size));
  std::string refused;
  for (int r = 0; r < world_size; ++r) {
    try {
      threads.emplace_back(run_rank, r);
    } catch (const std::system_error& e) {
      // The ranks started wait for this one in their first collective: abort them.
      refused = detail::concat("spawn: could not start the thread of rank ", r,
                               " of a world size of ", world_size, " (", e.what(), ")");
      state.fail(r, refused);
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  LOOM_CHECK(refused.empty(), refused);
  state.rethrow_first();
}

}  // namespace loom::dist
