// The threads backend (see threads_group.h). Each collective is a slot keyed by its sequence
// number; the rank that fills the slot last runs it, in sequence order, for everyone.
#include "loom/distributed/threads_group.h"

#include <condition_variable>
#include <cstring>
#include <map>

#include "loom/distributed/reduce_buffers.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/primitives.h"

namespace loom::dist {

namespace {

struct Arrival {
  CollectiveInfo info;
  Tensor input, output;
  WorkPtr work;
  std::shared_ptr<cuda::Event> ready;  // CUDA: the rank's stream reached the collective
};

class ThreadsWorld {
 public:
  ThreadsWorld(int size, Device device) : size_(size), device_(device) {
    if (device.is_cuda()) stream_ = cuda::create_stream(device.index);
  }
  ~ThreadsWorld() {
    if (!stream_) return;
    try {
      cuda::synchronize_stream(stream_);
      cuda::destroy_stream(device_.index, stream_);
    } catch (const Error&) {
      // A device error already reached the ranks; a destructor has no one left to tell.
    }
  }

  void join(std::weak_ptr<ProcessGroup> group) {
    std::lock_guard<std::mutex> lock(mutex_);
    groups_.push_back(std::move(group));
  }

  void arrive(int rank, Arrival arrival) {
    std::vector<Arrival> all;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (aborted_) {
        const std::string reason = reason_;
        lock.unlock();
        fail_after_abort(rank, *arrival.work, reason);
        return;
      }
      Slot& slot = slots_[arrival.info.sequence];
      if (slot.arrivals.empty()) slot.arrivals.resize(static_cast<size_t>(size_));
      slot.arrivals[static_cast<size_t>(rank)] = std::move(arrival);
      if (++slot.count < size_) return;
      all = std::move(slot.arrivals);
      slots_.erase(all[0].info.sequence);
    }
    execute_in_order(all);
  }

  void abort(int rank, const std::string& reason) {
    abort_with(detail::concat("rank ", rank, " aborted the group: ", reason));
  }

  // Fails every pending collective of every rank with `message` and aborts their groups.
  void abort_with(const std::string& message) {
    std::vector<WorkPtr> pending;
    std::vector<std::weak_ptr<ProcessGroup>> groups;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_) return;
      aborted_ = true;
      reason_ = message;
      for (auto& [seq, slot] : slots_) {
        for (Arrival& a : slot.arrivals) {
          if (a.work) pending.push_back(a.work);
        }
      }
      slots_.clear();
      groups = groups_;
    }
    executed_.notify_all();
    // The groups first, so that a rank woken by its work's failure finds its group aborted.
    for (auto& g : groups) {
      if (auto group = g.lock()) group->abort(message);
    }
    for (const WorkPtr& w : pending) w->mark_failed(message);
  }

  // "; ranks [2, 3] had not arrived" for a collective still waiting in its slot.
  std::string missing_ranks(uint64_t sequence) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = slots_.find(sequence);
    if (it == slots_.end()) return {};
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (!it->second.arrivals[static_cast<size_t>(r)].work) missing.push_back(r);
    }
    return detail::concat("; ranks ", missing, " had not arrived");
  }

 private:
  struct Slot {
    std::vector<Arrival> arrivals;
    int count = 0;
  };

  // Collectives run in sequence order (a rank may queue several before the first is run by
  // another thread), so two collectives on one tensor never race.
  void execute_in_order(std::vector<Arrival>& all) {
    const uint64_t sequence = all[0].info.sequence;
    std::unique_lock<std::mutex> lock(mutex_);
    executed_.wait(lock, [&] { return next_ == sequence || aborted_; });
    const bool aborted = aborted_;
    const std::string reason = reason_;
    lock.unlock();
    if (aborted) {
      for (size_t r = 0; r < all.size(); ++r) {
        fail_after_abort(static_cast<int>(r), *all[r].work, reason);
      }
      return;
    }
    const std::string mismatch = find_mismatch(all);
    if (!mismatch.empty()) {
      abort_with(mismatch);  // through the groups first, as fail_after_abort does
      for (Arrival& a : all) a.work->mark_failed(mismatch);
      return;
    }
    try {
      device_.is_cuda() ? run_cuda(all) : run_cpu(all);
    } catch (const std::exception& e) {
      for (Arrival& a : all) a.work->mark_failed(e.what());
    }
    lock.lock();
    ++next_;
    lock.unlock();
    executed_.notify_all();
  }

  // A work that fails because the world was aborted: its rank's group hears of the abort
  // first (abort_with may still be on its way to it), so whoever the failure wakes finds the
  // group aborted. Called without mutex_: the group's abort comes back to abort_with.
  void fail_after_abort(int rank, Work& work, const std::string& reason) {
    if (auto group = groups_[static_cast<size_t>(rank)].lock()) group->abort(reason);
    work.mark_failed(reason);
  }

  static std::string find_mismatch(const std::vector<Arrival>& all) {
    const CollectiveInfo& first = all[0].info;
    for (size_t r = 1; r < all.size(); ++r) {
      const CollectiveInfo& other = all[r].info;
      const bool reduces = first.kind == OpKind::AllReduce || first.kind == OpKind::ReduceScatter;
      if (other.kind != first.kind || (reduces && other.reduce != first.reduce) ||
          other.root != first.root || other.dtype != first.dtype || other.shape != first.shape) {
        return detail::concat("collectives differ across ranks: rank 0 called ", first.describe(),
                              " but rank ", r, " called ", other.describe());
      }
    }
    return {};
  }

  static std::vector<const void*> inputs(const std::vector<Arrival>& all, size_t byte_offset = 0) {
    std::vector<const void*> srcs;
    for (const Arrival& a : all)
      srcs.push_back(static_cast<const char*>(a.input.raw_data()) + byte_offset);
    return srcs;
  }

  void run_cpu(std::vector<Arrival>& all) {
    const CollectiveInfo& info = all[0].info;
    switch (info.kind) {
      case OpKind::AllReduce: {
        if (size_ == 1) break;  // a reduction over one rank is the tensor itself
        const size_t bytes = all[0].input.nbytes();
        Tensor sum = empty(all[0].input.shape(), TensorOptions(info.dtype));
        reduce_buffers_cpu(sum.raw_data(), inputs(all), all[0].input.numel(), info.dtype,
                           info.reduce);
        for (Arrival& a : all) std::memcpy(a.output.raw_data(), sum.raw_data(), bytes);
        break;
      }
      case OpKind::Broadcast:
        for (int r = 0; r < size_; ++r) {
          if (r != info.root)
            std::memcpy(all[r].output.raw_data(), all[info.root].input.raw_data(),
                        all[r].output.nbytes());
        }
        break;
      case OpKind::AllGather: {
        const size_t bytes = all[0].input.nbytes();
        for (Arrival& a : all) {
          for (int k = 0; k < size_; ++k) {
            std::memcpy(static_cast<char*>(a.output.raw_data()) + k * bytes,
                        all[k].input.raw_data(), bytes);
          }
        }
        break;
      }
      case OpKind::ReduceScatter:
        for (int r = 0; r < size_; ++r) {
          const Tensor& out = all[r].output;
          reduce_buffers_cpu(out.raw_data(), inputs(all, r * out.nbytes()), out.numel(), info.dtype,
                             info.reduce);
        }
        break;
      case OpKind::Barrier:
        break;
    }
    for (Arrival& a : all) a.work->mark_completed();
  }

  void run_cuda(std::vector<Arrival>& all) {
    const CollectiveInfo& info = all[0].info;
    const int device = device_.index;
    cuda::DeviceGuard device_guard(device);
    cuda::StreamGuard stream_guard(device, stream_);
    for (Arrival& a : all) {
      if (a.ready) a.ready->wait(stream_);
    }
    auto copy = [&](void* dst, const void* src, size_t bytes) {
      if (bytes) loom::detail::cuda_memcpy(dst, device_, src, device_, bytes);
    };
    switch (info.kind) {
      case OpKind::AllReduce: {
        if (size_ == 1) break;  // a reduction over one rank is the tensor itself
        // Allocated on the communication stream, so its reuse is ordered after these kernels.
        Tensor sum = empty(all[0].input.shape(), TensorOptions(info.dtype).device(device_));
        reduce_buffers_cuda(sum.raw_data(), inputs(all), sum.numel(), info.dtype, info.reduce,
                            stream_);
        for (Arrival& a : all) copy(a.output.raw_data(), sum.raw_data(), sum.nbytes());
        break;
      }
      case OpKind::Broadcast:
        for (int r = 0; r < size_; ++r) {
          if (r != info.root)
            copy(all[r].output.raw_data(), all[info.root].input.raw_data(), all[r].output.nbytes());
        }
        break;
      case OpKind::AllGather: {
        const size_t bytes = all[0].input.nbytes();
        for (Arrival& a : all) {
          for (int k = 0; k < size_; ++k)
            copy(static_cast<char*>(a.output.raw_data()) + k * bytes, all[k].input.raw_data(),
                 bytes);
        }
        break;
      }
      case OpKind::ReduceScatter:
        for (int r = 0; r < size_; ++r) {
          const Tensor& out = all[r].output;
          if (out.numel() == 0) continue;
          reduce_buffers_cuda(out.raw_data(), inputs(all, r * out.nbytes()), out.numel(),
                              info.dtype, info.reduce, stream_);
        }
        break;
      case OpKind::Barrier:
        break;
    }
    auto done = std::make_shared<cuda::Event>(device, false);
    done->record(stream_);
    for (Arrival& a : all) a.work->mark_launched(done);
  }

  const int size_;
  const Device device_;
  cuda::StreamHandle stream_ = nullptr;  // the communication stream (CUDA)
  std::mutex mutex_;
  std::condition_variable executed_;
  std::map<uint64_t, Slot> slots_;
  uint64_t next_ = 0;  // the sequence number to run next
  bool aborted_ = false;
  std::string reason_;
  std::vector<std::weak_ptr<ProcessGroup>> groups_;  // by rank; complete before any rank runs
};

class ThreadsGroup : public ProcessGroup {
 public:
  ThreadsGroup(std::shared_ptr<ThreadsWorld> world, int rank, int size, Device device,
               const GroupOptions& options)
      : ProcessGroup(rank, size, device, options), world_(std::move(world)) {}

  const char* backend() const override { return "threads"; }

 protected:
  void start(const Collective& c, const WorkPtr& work) override {
    Arrival a{c.info, c.input, c.output, work, nullptr};
    if (device().is_cuda()) {
      a.ready = std::make_shared<cuda::Event>(device().index, false);
      a.ready->record(cuda::current_stream(device().index));
    }
    world_->arrive(rank(), std::move(a));
  }
  void on_abort(const std::string& reason) override { world_->abort(rank(), reason); }
  bool checks_collectives_itself() const override { return true; }
  std::string timeout_detail(uint64_t sequence) override { return world_->missing_ranks(sequence); }

 private:
  std::shared_ptr<ThreadsWorld> world_;
};

}  // namespace

std::vector<GroupPtr> make_threads_groups(int size, Device device, const GroupOptions& options) {
  LOOM_CHECK(size >= 1, "make_threads_groups: world size must be at least 1, got ", size);
  if (device.is_cuda()) {
    LOOM_CHECK(device.index < cuda_device_count(), "make_threads_groups: ", device.str(),
               " does not exist (", cuda_device_count(), " CUDA devices visible)");
  }
  auto world = std::make_shared<ThreadsWorld>(size, device);
  std::vector<GroupPtr> groups;
  for (int r = 0; r < size; ++r) {
    groups.push_back(std::make_shared<ThreadsGroup>(world, r, size, device, options));
    world->join(groups.back());
  }
  return groups;
}

}  // namespace loom::dist
