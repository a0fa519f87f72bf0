// StoreGroup (store_group.h): the collectives of the "tcp" backend as rounds of store keys.
//
// Round t is this group's t-th collective (the fingerprint checks of check_collectives are
// rounds too). In it rank r sets "r<t>/<r>" (reduce_scatter: "r<t>/<r>><d>" for each other
// rank d, holding only d's slice) to 'C' + a header + its bytes, then reads every other rank's
// key of round t in rank order. A rank that aborts sets its keys of the first round it has not
// contributed to to 'P' + the reason instead: the others' waits for it end there, naming it.
// Tensor bytes travel in host order: all ranks must share one byte order.
#include "loom/distributed/store_group.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <thread>

#include "loom/distributed/reduce_buffers.h"
#include "loom/tensor/shape.h"

namespace loom::dist {

namespace {

using Clock = std::chrono::steady_clock;

// How long one get waits before the worker looks again at whether its group was destroyed.
constexpr std::chrono::milliseconds kWaitSlice(200);

// What every rank must agree on about a round, sent ahead of the bytes: a rank that runs
// another collective in the same round is caught here even without check_collectives.
struct Header {
  uint8_t kind, reduce, dtype, unused = 0;
  int32_t root;
  int64_t numel;
  uint64_t sequence;
};
// After the 'C' and padding: the payload starts 32 bytes into a heap string (aligned to 16 by
// malloc), so the reduction reads every dtype at its natural alignment.
constexpr size_t kHeaderAt = 8;
constexpr size_t kPayloadAt = kHeaderAt + sizeof(Header);
static_assert(kPayloadAt % 16 == 0, "the payload must stay aligned for every dtype");

Header header_of(const CollectiveInfo& info) {
  Header h{};
  h.kind = static_cast<uint8_t>(info.kind);
  h.reduce = info.kind == OpKind::AllReduce || info.kind == OpKind::ReduceScatter
                 ? static_cast<uint8_t>(info.reduce)
                 : uint8_t{255};
  h.dtype = info.kind == OpKind::Barrier ? uint8_t{255} : static_cast<uint8_t>(info.dtype);
  h.root = info.kind == OpKind::Broadcast ? info.root : -1;
  h.numel = info.kind == OpKind::Barrier ? 0 : numel_of(info.shape);
  h.sequence = info.sequence;
  return h;
}

bool same_collective(const Header& a, const Header& b) {
  return a.kind == b.kind && a.reduce == b.reduce && a.dtype == b.dtype && a.root == b.root &&
         a.numel == b.numel;
}

std::string describe(const Header& h) {
  const auto kind = static_cast<OpKind>(h.kind);
  std::string s = detail::concat(op_kind_name(kind), " #", h.sequence);
  if (kind == OpKind::Barrier) return s;
  s += " (";
  if (h.reduce != 255) s += detail::concat(reduce_op_name(static_cast<ReduceOp>(h.reduce)), ", ");
  if (kind == OpKind::Broadcast) s += detail::concat("root ", h.root, ", ");
  return s + detail::concat(dtype_name(static_cast<DType>(h.dtype)), ", ", h.numel, " elements)");
}

std::string contribution(const Header& h, const void* bytes, size_t size) {
  std::string v(kPayloadAt + size, '\0');
  v[0] = 'C';
  std::memcpy(&v[kHeaderAt], &h, sizeof h);
  if (size > 0) std::memcpy(&v[kPayloadAt], bytes, size);
  return v;
}

class StoreGroup final : public ProcessGroup {
 public:
  StoreGroup(std::shared_ptr<Store> store, std::string prefix, int rank, int size,
             const GroupOptions& options)
      : ProcessGroup(rank, size, kCPU, options),
        store_(std::move(store)),
        prefix_(std::move(prefix)) {
    worker_ = std::thread([this] { work_loop(); });
  }

  ~StoreGroup() override {
    // Destroyed while an exception leaves this rank: its peers would wait for its part of the
    // next round until their timeout, so they are told now.
    if (std::uncaught_exceptions() > 0) {
      abort(detail::concat(who(), " left its group while an exception was thrown"));
    }
    std::deque<Task> dropped;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      stopping_.store(true);
      dropped.swap(queue_);
    }
    queue_changed_.notify_all();
    for (Task& t : dropped) {
      t.work->mark_failed(
          detail::concat(who(), " was destroyed before ", t.c.info.describe(), " ran"));
    }
    worker_.join();
  }

  const char* backend() const override { return "tcp"; }

 protected:
  void start(const Collective& c, const WorkPtr& work) override {
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      queue_.push_back(Task{c, work});
    }
    queue_changed_.notify_all();
  }

  void on_abort(const std::string& reason) override {
    std::deque<Task> dropped;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      dropped.swap(queue_);
    }
    for (Task& t : dropped) t.work->mark_failed(reason);
    // Under round_mutex_ the worker cannot contribute to the round being poisoned afterwards.
    std::lock_guard<std::mutex> lock(round_mutex_);
    if (poisoned_) return;
    poisoned_ = true;
    if (size() == 1) return;
    const std::string note = "P" + who() + " aborted the group: " + reason;
    try {
      store_->set(key(contributed_, rank(), -1), note);
      for (int d = 0; d < size(); ++d) {
        if (d != rank()) store_->set(key(contributed_, rank(), d), note);
      }
    } catch (const Error&) {
      // The store itself is gone; the other ranks hear of that from it.
    }
  }

 private:
  struct Task {
    Collective c;
    WorkPtr work;
  };

  // "r<round>/<from>" (to -1: read by every rank) or "r<round>/<from>><to>".
  std::string key(uint64_t round, int from, int to) const {
    return to < 0 ? detail::concat(prefix_, "r", round, "/", from)
                  : detail::concat(prefix_, "r", round, "/", from, ">", to);
  }

  void work_loop() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(queue_mutex_);
        queue_changed_.wait(lock, [&] { return stopping_.load() || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      if (is_aborted()) {
        task.work->mark_failed(abort_reason());
        continue;
      }
      try {
        exchange(task.c, task.work->deadline());
        task.work->mark_completed();
      } catch (const std::exception& e) {
        const std::string reason = e.what();
        // Some ranks may have finished this round and others not: the rounds are out of step
        // and no later collective of this group could be trusted. The abort comes first, so
        // that the waiter the failure wakes finds the group aborted.
        abort(reason);
        task.work->mark_failed(reason);
      }
    }
  }

  // One collective as one round: contribute, read the others in rank order, combine.
  void exchange(const Collective& c, Clock::time_point deadline) {
    const CollectiveInfo& info = c.info;
    const Header mine = header_of(info);
    const int n = size(), me = rank();
    const bool scattered = info.kind == OpKind::ReduceScatter;
    const size_t esize = info.kind == OpKind::Barrier ? 0 : element_size(info.dtype);
    const size_t part = static_cast<size_t>(mine.numel) * esize;  // bytes one rank sends one rank
    const auto* in = c.input.defined() ? static_cast<const char*>(c.input.raw_data()) : nullptr;

    // What rank `from` sends everyone (or, scattered, this rank): how many bytes.
    auto part_of = [&](int from) {
      if (info.kind == OpKind::Barrier) return size_t{0};
      if (info.kind == OpKind::Broadcast) return from == info.root ? part : size_t{0};
      return part;
    };

    uint64_t round;
    std::vector<std::string> keys;
    std::string own;  // this rank's own contribution, used in place of reading it back
    {
      std::lock_guard<std::mutex> lock(round_mutex_);
      if (poisoned_) throw Error(abort_reason());
      round = contributed_;
      if (scattered) {
        for (int d = 0; d < n; ++d) {
          if (d == me) continue;
          keys.push_back(key(round, me, d));
          store_->set(keys.back(), contribution(mine, in + d * part, part));
        }
        own = contribution(mine, in + me * part, part);
      } else {
        own = contribution(mine, in, part_of(me));
        if (n > 1) {
          keys.push_back(key(round, me, -1));
          store_->set(keys.back(), own);
        }
      }
      contributed_ = round + 1;
    }

    std::vector<std::string> parts(n);
    for (int r = 0; r < n; ++r) {
      if (r == me) {
        parts[r] = std::move(own);
        continue;
      }
      parts[r] = wait_for(key(round, r, scattered ? me : -1), r, info, deadline);
      check_part(parts[r], r, info, mine, part_of(r));
    }

    std::vector<const void*> srcs(n);
    for (int r = 0; r < n; ++r) srcs[r] = parts[r].data() + kPayloadAt;
    switch (info.kind) {
      case OpKind::AllReduce:
      case OpKind::ReduceScatter:
        // dst is the caller's tensor; the sources are copies in `parts`, never dst itself.
        reduce_buffers_cpu(c.output.raw_data(), srcs, mine.numel, info.dtype, info.reduce);
        break;
      case OpKind::Broadcast:
        if (me != info.root && part > 0) std::memcpy(c.output.raw_data(), srcs[info.root], part);
        break;
      case OpKind::AllGather:
        for (int r = 0; r < n; ++r) {
          if (part > 0)
            std::memcpy(static_cast<char*>(c.output.raw_data()) + r * part, srcs[r], part);
        }
        break;
      case OpKind::Barrier:
        break;
    }

    // Why the last round's keys may go now: this rank has read every rank's key of this round,
    // and each rank set that key only after it had finished the last round, which included
    // reading this rank's keys of it. So no rank can still be waiting for them. (This round's
    // keys stay until the next round proves the same of them.)
    for (const std::string& k : previous_keys_) {
      try {
        store_->erase(k);
      } catch (const Error&) {
        // A store that cannot erase cannot carry the next round either; that one fails, naming why.
      }
    }
    previous_keys_ = std::move(keys);
  }

  // The value of rank `from`'s key, waiting up to `deadline` in slices so that a destroyed
  // group's worker stops within one slice.
  std::string wait_for(const std::string& k, int from, const CollectiveInfo& info,
                       Clock::time_point deadline) {
    for (;;) {
      if (stopping_.load()) {
        throw Error(detail::concat(who(), " was destroyed while ", info.describe(),
                                   " waited for rank ", from));
      }
      if (is_aborted()) throw Error(abort_reason());
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        throw Error(detail::concat("timed out after ", options().timeout.count(),
                                   " ms (the group's timeout) waiting for rank ", from,
                                   "'s part of ", info.describe(), " (store key \"", k, "\")"));
      }
      const auto slice = std::min<std::chrono::milliseconds>(
          kWaitSlice, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                          std::chrono::milliseconds(1));
      std::string value;
      try {
        value = store_->get(k, slice);
      } catch (const Error& e) {
        // A get that gave up after its whole slice timed out: look again. One that failed sooner
        // failed for a reason (a rank dropped, rank 0 died), which a store keeps reporting, so
        // telling the two apart by time cannot turn a failure into a retry loop.
        if (Clock::now() - now >= slice) continue;
        throw Error(detail::concat("reading rank ", from, "'s part failed: ", e.what()));
      }
      if (!value.empty() && value[0] == 'P') throw Error(value.substr(1));
      return value;
    }
  }

  void check_part(const std::string& v, int from, const CollectiveInfo& info, const Header& mine,
                  size_t expected_bytes) const {
    LOOM_CHECK(v.size() >= kPayloadAt && v[0] == 'C', who(), ": rank ", from, "'s part of ",
               info.describe(), " is not a contribution (", v.size(),
               " bytes): is another program using this store's keys?");
    Header theirs;
    std::memcpy(&theirs, &v[kHeaderAt], sizeof theirs);
    LOOM_CHECK(same_collective(mine, theirs), "collectives differ across ranks: rank ", rank(),
               " called ", info.describe(), " but rank ", from, " called ", describe(theirs));
    LOOM_CHECK(v.size() - kPayloadAt == expected_bytes, who(), ": rank ", from, " sent ",
               v.size() - kPayloadAt, " bytes for ", info.describe(), ", expected ",
               expected_bytes);
  }

  const std::shared_ptr<Store> store_;
  const std::string prefix_;

  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<Task> queue_;
  std::atomic<bool> stopping_{false};

  std::mutex round_mutex_;    // orders the worker's contributions against abort's poison note
  uint64_t contributed_ = 0;  // rounds this rank has set its keys for
  bool poisoned_ = false;
  std::vector<std::string> previous_keys_;  // worker only: this rank's keys of the last round

  std::thread worker_;
};

}  // namespace

GroupPtr make_store_group(std::shared_ptr<Store> store, int rank, int size,
                          const GroupOptions& options) {
  LOOM_CHECK(store != nullptr, "make_store_group: the store is null");
  LOOM_CHECK(size >= 1 && rank >= 0 && rank < size, "make_store_group: rank ", rank,
             " is outside [0, ", size, ")");
  const int64_t made = store->add(detail::concat("store_group/made_by_rank_", rank), 1);
  return std::make_shared<StoreGroup>(std::move(store), detail::concat("sg", made, "/"), rank, size,
                                      options);
}

}  // namespace loom::dist
