// DistributedDataParallel (ddp.h): the layout of the gradient arenas and buckets, the hooks
// that launch a bucket's all-reduce once its gradients are in, and the end-of-backward step.
#include "loom/distributed/ddp.h"

#include <map>
#include <utility>

#include "loom/distributed/flat_copy.h"
#include "loom/distributed/model_check.h"
#include "loom/distributed/stall_timer.h"
#include "loom/tensor/autograd.h"

namespace loom::dist {

namespace {

// Elements of padding that keep every slot of an arena 16-byte aligned, so the flat copies
// move 16 bytes per access.
int64_t padded(int64_t numel, DType dtype) {
  const int64_t per16 = std::max<int64_t>(1, 16 / static_cast<int64_t>(element_size(dtype)));
  return (numel + per16 - 1) / per16 * per16;
}

bool is_view_of(const Tensor& grad, const Tensor& view) {
  return grad.defined() && grad.storage().data() == view.storage().data() &&
         grad.offset() == view.offset() && grad.strides() == view.strides();
}

// A tensor's slot in its arena, in the tensor's own layout (NCHW, or channels-last after
// Module::to), so its gradient can be the slot itself, as PyTorch's gradient-as-bucket-view.
Tensor slot_view(const Tensor& flat, int64_t offset, const Tensor& t) {
  const Tensor run = flat.narrow(0, offset, t.numel());
  if (t.suggest_memory_format() != MemoryFormat::ChannelsLast) return run.view(t.shape());
  const Shape& s = t.shape();
  return run.view({s[0], s[2], s[3], s[1]}).permute({0, 3, 1, 2});
}

struct Arena {
  Device device;
  DType dtype;
  Tensor flat;
};

// Flat storage for same-kind tensors, in the given order, each padded to 16 bytes; returns
// each tensor's offset in its arena.
std::vector<std::pair<int, int64_t>> lay_out(const NamedList& tensors, std::vector<Arena>& arenas) {
  std::map<std::pair<int, int>, int> by_kind;  // (device index or -1, dtype) -> arena
  std::vector<int64_t> sizes;
  std::vector<std::pair<int, int64_t>> places;
  for (const auto& entry : tensors) {
    const Tensor& t = entry.second;
    const std::pair<int, int> kind{t.is_cuda() ? t.device().index : -1,
                                   static_cast<int>(t.dtype())};
    auto it = by_kind.find(kind);
    if (it == by_kind.end()) {
      it = by_kind.emplace(kind, static_cast<int>(arenas.size())).first;
      arenas.push_back({t.device(), t.dtype(), Tensor()});
      sizes.push_back(0);
    }
    places.emplace_back(it->second, sizes[it->second]);
    sizes[it->second] += padded(t.numel(), t.dtype());
  }
  for (size_t a = 0; a < arenas.size(); ++a) {
    arenas[a].flat = zeros({sizes[a]}, TensorOptions(arenas[a].dtype).device(arenas[a].device));
  }
  return places;
}

}  // namespace

struct DistributedDataParallel::Reducer {
  struct Slot {
    std::string name;
    Tensor param;
    Tensor view;                                     // the parameter's gradient in its arena
    MemoryFormat format = MemoryFormat::Contiguous;  // the view's (and so the parameter's) layout
    int bucket = 0;
    uint64_t hook = 0;
    bool ready = false;
  };
  struct Bucket {
    int arena = 0;
    int64_t offset = 0, numel = 0;
    Tensor flat;  // its slice of the arena, which the all-reduce averages in place
    std::vector<int> slots;
    int pending = 0;
    std::vector<FlatCopy> copies;  // gradients backward left outside the arena
    std::vector<Tensor> incoming;  // ... kept alive until their copy is queued
    WorkPtr work;
  };

  ProcessGroup& group;
  const DdpOptions options;
  std::vector<Arena> arenas;
  std::vector<Slot> slots;  // reverse registration order
  std::vector<Bucket> buckets;
  std::vector<BucketInfo> infos;
  std::vector<Arena> buffer_arenas;
  size_t next_bucket = 0;
  bool finishing_queued = false;
  bool sync = true;
  DdpStepStats stats, last;
  std::unique_ptr<StallTimer> stall_timer;  // while exposed communication is timed

  Reducer(ProcessGroup& g, const DdpOptions& opts, const NamedList& params)
      : group(g), options(opts) {
    NamedList reversed(params.rbegin(), params.rend());
    const auto places = lay_out(reversed, arenas);
    size_t total = 0;
    for (const auto& entry : reversed) total += entry.second.nbytes();
    const bool one_bucket = total < options.single_bucket_bytes;
    for (size_t i = 0; i < reversed.size(); ++i) {
      const Tensor& p = reversed[i].second;
      const auto [arena, offset] = places[i];
      Slot slot;
      slot.name = reversed[i].first;
      slot.param = p;
      slot.view = slot_view(arenas[arena].flat, offset, p);
      slot.format = slot.view.suggest_memory_format();
      // A new bucket where the arena changes or the current one is full.
      const size_t limit = buckets.size() <= 1 ? options.first_bucket_bytes : options.bucket_bytes;
      const bool start =
          buckets.empty() || buckets.back().arena != arena ||
          (!one_bucket &&
           static_cast<size_t>(buckets.back().numel) * element_size(p.dtype()) >= limit);
      if (start) {
        buckets.push_back({arena, offset, 0, Tensor(), {}, 0, {}, {}, nullptr});
        infos.push_back({p.device(), p.dtype(), offset, 0, {}});
      }
      Bucket& b = buckets.back();
      b.numel = offset + padded(p.numel(), p.dtype()) - b.offset;
      b.slots.push_back(static_cast<int>(slots.size()));
      infos.back().numel = b.numel;
      infos.back().parameters.push_back(slot.name);
      slot.bucket = static_cast<int>(buckets.size()) - 1;
      slots.push_back(std::move(slot));
    }
    for (Bucket& b : buckets)
      b.flat = arenas[static_cast<size_t>(b.arena)].flat.narrow(0, b.offset, b.numel);
    reset();
  }

  void reset() {
    for (Slot& s : slots) s.ready = false;
    for (Bucket& b : buckets) {
      b.pending = static_cast<int>(b.slots.size());
      b.copies.clear();
      b.incoming.clear();
      b.work = nullptr;
    }
    next_bucket = 0;
    finishing_queued = false;
    stats = DdpStepStats{static_cast<int>(buckets.size()), 0, 0, 0};
  }

  // A parameter's gradient is final for this backward.
  void mark_ready(int index, bool from_hook) {
    Slot& slot = slots[static_cast<size_t>(index)];
    if (slot.ready) return;
    slot.ready = true;
    Bucket& bucket = buckets[static_cast<size_t>(slot.bucket)];
    const Tensor grad = slot.param.grad();
    if (!grad.defined()) {
      slot.view.zero_();  // an unused parameter contributes zeros
      slot.param.set_grad(slot.view);
    } else if (!is_view_of(grad, slot.view)) {
      // Backward made a new tensor (the gradient was none): it moves into the arena with the
      // bucket's other gradients in one copy, and the arena view becomes the gradient.
      Tensor dense = grad.contiguous(slot.format);  // in the slot's order
      bucket.copies.push_back({dense.raw_data(), slot.view.raw_data(), dense.nbytes()});
      bucket.incoming.push_back(std::move(dense));
      slot.param.set_grad(slot.view);
    }
    if (--bucket.pending == 0) {
      if (static_cast<size_t>(slot.bucket) != next_bucket && from_hook) ++stats.held_back;
      launch_ready(from_hook);
    }
  }

  // Buckets start in index order on every rank, so their collectives match across ranks.
  void launch_ready(bool from_hook) {
    while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
      Bucket& b = buckets[next_bucket++];
      copy_all(b.copies, arenas[static_cast<size_t>(b.arena)].device);
      b.copies.clear();
      b.incoming.clear();  // freed on the compute stream, after the copy that reads them
      b.work = group.all_reduce(b.flat, ReduceOp::Avg);
      ++(from_hook ? stats.launched_during_backward : stats.launched_at_end);
    }
  }

  void on_hook(int index) {
    if (!sync) {  // under no_sync(): this backward reduces no bucket, and last_step() says so
      last = DdpStepStats{};
      return;
    }
    if (!finishing_queued) {
      finishing_queued = true;
      queue_backward_callback([this] { finish(); });
    }
    mark_ready(index, true);
  }

  // End of backward: every gradient must have come (or be declared unused), then the compute
  // stream waits for every bucket's all-reduce.
  void finish() {
    std::vector<std::string> missing;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].ready) continue;
      if (options.find_unused_parameters) {
        mark_ready(static_cast<int>(i), false);
      } else {
        missing.push_back(slots[i].name);
      }
    }
    if (!missing.empty()) {
      std::string names;
      for (size_t i = 0; i < missing.size() && i < 5; ++i)
        names += (i ? ", '" : "'") + missing[i] + "'";
      if (missing.size() > 5) names += detail::concat(" and ", missing.size() - 5, " more");
      const std::string message = detail::concat(
          "DistributedDataParallel: ", group.who(), ": backward gave no gradient to ", names,
          ": every parameter must take part in the loss on every rank, or set "
          "DdpOptions::find_unused_parameters");
      reset();
      group.abort(message);  // the other ranks wait for buckets this rank will never send
      throw Error(message);
    }
    if (stall_timer) stall_timer->begin();
    for (Bucket& b : buckets) b.work->wait_stream();
    if (stall_timer) stall_timer->end();
    last = stats;
    reset();
  }
};

DistributedDataParallel::DistributedDataParallel(nn::ModulePtr module, GroupPtr group,
                                                 DdpOptions options)
    : module_(std::move(module)), group_(std::move(group)) {
  LOOM_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  LOOM_CHECK(group_ != nullptr, "DistributedDataParallel: the process group is null");
  register_module("module", module_);

  // Every parameter is checked and set to rank 0's, frozen ones too; the trainable ones are
  // also reduced.
  NamedList all_params, params, buffers;
  for (const auto& [name, p] : module_->named_parameters()) {
    all_params.emplace_back(name, p);
    if (p.requires_grad()) params.emplace_back(name, p);
  }
  for (const auto& [name, b] : module_->named_buffers()) buffers.emplace_back(name, b);
  for (const NamedList* list : {&all_params, &buffers}) {
    for (const auto& [name, t] : *list) {
      LOOM_CHECK(t.device() == group_->device(), "DistributedDataParallel: '", name, "' is on ",
                 t.device().str(), " but the group's collectives run on ", group_->device().str(),
                 " (", group_->who(), "); move the model first");
    }
  }
  check_same_across_ranks(*group_, all_params, "parameter");
  check_same_across_ranks(*group_, buffers, "buffer");
  broadcast_from_rank0(*group_, all_params);
  broadcast_from_rank0(*group_, buffers);

  reducer_ = std::make_unique<Reducer>(*group_, options, params);
  Reducer& r = *reducer_;
  for (size_t i = 0; i < r.slots.size(); ++i) {
    Reducer* reducer = reducer_.get();
    const int index = static_cast<int>(i);
    r.slots[i].hook = r.slots[i].param.register_post_accumulate_hook(
        [reducer, index](Tensor&) { reducer->on_hook(index); });
  }
  // Buffers live in flat arenas too, so broadcasting them before each forward is one
  // collective per kind, not one per buffer.
  if (!buffers.empty()) {
    const auto places = lay_out(buffers, r.buffer_arenas);
    NoGradGuard no_grad;
    for (size_t i = 0; i < buffers.size(); ++i) {
      const Tensor& b = buffers[i].second;
      Tensor slot = slot_view(r.buffer_arenas[places[i].first].flat, places[i].second, b);
      slot.copy_(b);
      nn::retarget(b, slot);  // every handle of the buffer now reads the arena
    }
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& slot : reducer_->slots) slot.param.remove_post_accumulate_hook(slot.hook);
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  Reducer& r = *reducer_;
  if (r.finishing_queued) {
    // The last backward threw before its end. Had it started buckets, the peers (which started
    // all of theirs) would pair this step's first bucket with their later ones: garbage or a
    // hang. So the group goes down, as for a missing gradient; a throw before any bucket
    // started only costs this rank's partial gradients.
    const bool started = r.next_bucket > 0;
    r.reset();
    if (started && group_->size() > 1) {
      const std::string message = detail::concat(
          "DistributedDataParallel: ", group_->who(),
          ": the last backward threw after some of its buckets "
          "were all-reduced, so this rank's collectives no longer pair with the other ranks'");
      group_->abort(message);
      throw Error(message);
    }
  }
  if (r.options.broadcast_buffers && is_training() && group_->size() > 1) {
    for (const Arena& a : r.buffer_arenas) group_->broadcast(a.flat, 0)->wait_stream();
  }
  return module_->forward(input);
}

const std::vector<BucketInfo>& DistributedDataParallel::buckets() const { return reducer_->infos; }

DdpStepStats DistributedDataParallel::last_step() const { return reducer_->last; }

void DistributedDataParallel::time_exposed_communication(bool on, int steps) {
  if (!on) {
    reducer_->stall_timer.reset();
  } else if (!reducer_->stall_timer) {
    reducer_->stall_timer = std::make_unique<StallTimer>(group_->device(), steps);
  }
}

std::vector<double> DistributedDataParallel::exposed_communication_ms() {
  LOOM_CHECK(reducer_->stall_timer != nullptr,
             "DistributedDataParallel::exposed_communication_ms: "
             "call time_exposed_communication(true) before the backwards to be timed");
  return reducer_->stall_timer->take_ms();
}

bool DistributedDataParallel::set_gradient_sync(bool on) {
  return std::exchange(reducer_->sync, on);
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.set_gradient_sync(false)) {}

DistributedDataParallel::NoSync::~NoSync() { ddp_.set_gradient_sync(previous_); }

}  // namespace loom::dist
