// The backend-independent half of ProcessGroup: argument checks that name the bad values,
// sequence numbers, the in-flight list, abort, and the cross-rank fingerprint check.
#include "loom/distributed/process_group.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "loom/distributed/event_pool.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/shape.h"

namespace loom::dist {

namespace {

bool check_requested_by_environment() {
  const char* v = std::getenv("LOOM_DIST_CHECK");
  return v && std::strcmp(v, "0") != 0 && *v != '\0';
}

// The fingerprint of a collective: what every rank must agree on.
constexpr int kFingerprintSize = 8;
void fingerprint(const CollectiveInfo& info, int64_t* out) {
  uint64_t shape_hash = 1469598103934665603ull;  // FNV-1a over the sizes (unsigned: it wraps)
  for (int64_t d : info.shape)
    shape_hash = (shape_hash ^ static_cast<uint64_t>(d)) * 1099511628211ull;
  out[0] = static_cast<int64_t>(info.kind);
  out[1] = static_cast<int64_t>(info.sequence);
  out[2] = info.kind == OpKind::AllReduce || info.kind == OpKind::ReduceScatter
               ? static_cast<int64_t>(info.reduce)
               : -1;
  out[3] = info.root;
  out[4] = static_cast<int64_t>(info.dtype);
  out[5] = static_cast<int64_t>(info.shape.size());
  out[6] = numel_of(info.shape);
  out[7] = static_cast<int64_t>(shape_hash);
}

// Decodes a fingerprint back into words (the shape itself is not carried: its size and element
// count are).
std::string describe_fingerprint(const int64_t* f) {
  const auto kind = static_cast<OpKind>(f[0]);
  std::string s = detail::concat(op_kind_name(kind), " #", f[1]);
  if (kind == OpKind::Barrier) return s;
  s += " (";
  if (f[2] >= 0) s += detail::concat(reduce_op_name(static_cast<ReduceOp>(f[2])), ", ");
  if (kind == OpKind::Broadcast) s += detail::concat("root ", f[3], ", ");
  return s + detail::concat(dtype_name(static_cast<DType>(f[4])), ", ", f[5], " dims, ", f[6],
                            " elements)");
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size, Device device, GroupOptions options)
    : rank_(rank), size_(size), device_(device), options_(options) {
  LOOM_CHECK(size >= 1, "ProcessGroup: world size must be at least 1, got ", size);
  LOOM_CHECK(rank >= 0 && rank < size, "ProcessGroup: rank ", rank, " is outside [0, ", size, ")");
  LOOM_CHECK(options.timeout.count() > 0, "ProcessGroup: the timeout must be positive, got ",
             options.timeout.count(), " ms");
  if (check_requested_by_environment()) options_.check_collectives = true;
}

ProcessGroup::~ProcessGroup() = default;

const std::string& ProcessGroup::who() const {
  std::call_once(who_once_, [this] {
    who_ = detail::concat("rank ", rank_, " of ", size_, " (", backend(), ")");
  });
  return who_;
}

std::string ProcessGroup::abort_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abort_reason_;
}

void ProcessGroup::abort(const std::string& reason) {
  std::vector<WorkPtr> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load()) return;
    abort_reason_ = reason;
    aborted_.store(true);
    pending.swap(in_flight_);
  }
  // The backend first: a waiter woken by its work's failure may free the work's tensors, which
  // a collective not yet told to stop (NCCL's kernels before ncclCommAbort) could still touch.
  on_abort(reason);
  for (const WorkPtr& w : pending) w->mark_failed(reason);
}

WorkPtr ProcessGroup::make_work(const CollectiveInfo& info) {
  std::weak_ptr<ProcessGroup> self = weak_from_this();
  auto work = std::make_shared<Work>(info, who(), device_, options_.timeout,
                                     [self, sequence = info.sequence](const std::string& reason) {
                                       if (auto group = self.lock()) {
                                         group->abort(reason + group->timeout_detail(sequence));
                                       }
                                     });
  std::lock_guard<std::mutex> lock(mutex_);
  // Finished works leave the list here (in place: no allocation in backward's bucket hooks) and
  // in in_flight(), so it stays as short as the queue; polling also completes them early, which
  // frees their events for the next collectives.
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                  [](const WorkPtr& w) { return w->is_completed(); }),
                   in_flight_.end());
  in_flight_.push_back(std::move(work));
  return in_flight_.back();
}

std::vector<WorkPtr> ProcessGroup::in_flight() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<WorkPtr> still;
  for (WorkPtr& w : in_flight_) {
    if (!w->is_completed()) still.push_back(w);
  }
  in_flight_ = still;
  return still;
}

void ProcessGroup::check_tensor(const char* op, const char* role, const Tensor& t) const {
  LOOM_CHECK(t.defined(), op, ": the ", role, " tensor is undefined (", who(), ")");
  LOOM_CHECK(t.device() == device_, op, ": the ", role, " tensor is on ", t.device().str(),
             " but this group's collectives run on ", device_.str(), " (", who(), ")");
  LOOM_CHECK(t.is_contiguous(), op, ": the ", role, " tensor (shape ", shape_str(t.shape()),
             ", strides ", shape_str(t.strides()),
             ") must be contiguous; call .contiguous() first");
  // Only NCCL's collectives can be recorded into a CUDA graph; the other backends complete
  // theirs from a host thread, which a replay never reaches.
  if (t.is_cuda() && !captures_collectives()) {
    cuda::check_not_capturing(
        t.device().index, op,
        ::loom::detail::concat("the ", backend(),
                               " backend runs its "
                               "collectives from the host (only NCCL's can be captured)")
            .c_str());
  }
}

WorkPtr ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) {
  check_tensor("all_reduce", "", tensor);
  LOOM_CHECK(op != ReduceOp::Avg || is_floating(tensor.dtype()),
             "all_reduce: avg needs a floating dtype, got ", dtype_name(tensor.dtype()),
             " (an integer mean would round; use sum)");
  return run(OpKind::AllReduce, op, -1, tensor, tensor, tensor.shape());
}

WorkPtr ProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_tensor("broadcast", "", tensor);
  LOOM_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a group of ",
             size_);
  return run(OpKind::Broadcast, ReduceOp::Sum, root, tensor, tensor, tensor.shape());
}

WorkPtr ProcessGroup::all_gather(const Tensor& output, const Tensor& input) {
  check_tensor("all_gather", "input", input);
  check_tensor("all_gather", "output", output);
  LOOM_CHECK(output.dtype() == input.dtype(), "all_gather: output is ", dtype_name(output.dtype()),
             " but input is ", dtype_name(input.dtype()));
  LOOM_CHECK(output.numel() == input.numel() * size_, "all_gather: output has ", output.numel(),
             " elements but ", size_, " ranks x input ", shape_str(input.shape()), " need ",
             input.numel() * size_);
  LOOM_CHECK(!output.storage().data() || output.storage().data() != input.storage().data() ||
                 output.offset() + output.numel() <= input.offset() ||
                 input.offset() + input.numel() <= output.offset(),
             "all_gather: output and input overlap");
  return run(OpKind::AllGather, ReduceOp::Sum, -1, input, output, input.shape());
}

WorkPtr ProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  check_tensor("reduce_scatter", "input", input);
  check_tensor("reduce_scatter", "output", output);
  LOOM_CHECK(output.dtype() == input.dtype(), "reduce_scatter: output is ",
             dtype_name(output.dtype()), " but input is ", dtype_name(input.dtype()));
  LOOM_CHECK(input.numel() == output.numel() * size_, "reduce_scatter: input has ", input.numel(),
             " elements but ", size_, " ranks x output ", shape_str(output.shape()), " need ",
             output.numel() * size_);
  LOOM_CHECK(op != ReduceOp::Avg || is_floating(input.dtype()),
             "reduce_scatter: avg needs a floating dtype, got ", dtype_name(input.dtype()));
  LOOM_CHECK(!output.storage().data() || output.storage().data() != input.storage().data(),
             "reduce_scatter: output and input must not share storage");
  return run(OpKind::ReduceScatter, op, -1, input, output, output.shape());
}

WorkPtr ProcessGroup::barrier() {
  return run(OpKind::Barrier, ReduceOp::Sum, -1, Tensor(), Tensor(), {});
}

WorkPtr ProcessGroup::watch_stream(const std::string& what) {
  CollectiveInfo info;
  info.sequence = sequence_;
  // Once a captured step: plain appends, not concat's stream.
  info.what = what + " (after collective #" + std::to_string(sequence_) + ")";
  if (is_aborted()) {
    throw Error(detail::concat("loom.dist: ", who(), ": ", info.what,
                               " refused: the group was aborted: ", abort_reason()));
  }
  WorkPtr work = make_work(info);
  if (!device_.is_cuda()) {
    work->mark_completed();
    return work;
  }
  if (!watch_events_) watch_events_ = std::make_unique<EventPool>(device_.index);
  std::shared_ptr<cuda::Event> done = watch_events_->spare();
  done->record(cuda::current_stream(device_.index));
  work->mark_launched(std::move(done));
  return work;
}

WorkPtr ProcessGroup::run(OpKind kind, ReduceOp reduce, int root, const Tensor& input,
                          const Tensor& output, const Shape& described_shape) {
  Collective c;
  c.info.kind = kind;
  c.info.sequence = sequence_++;
  c.info.reduce = reduce;
  c.info.root = root;
  c.info.dtype = input.defined() ? input.dtype() : kFloat32;
  c.info.shape = described_shape;
  c.input = input;
  c.output = output;
  if (is_aborted()) {
    throw Error(detail::concat("loom.dist: ", who(), ": ", c.info.describe(),
                               " refused: the group was aborted: ", abort_reason()));
  }
  if (options_.check_collectives && !checks_collectives_itself() && size_ > 1) {
    check_matches_across_ranks(c.info);
  }
  WorkPtr work = make_work(c.info);
  if (input.defined()) work->keep_alive({input, output});
  start(c, work);
  return work;
}

void ProcessGroup::check_matches_across_ranks(const CollectiveInfo& info) {
  Tensor mine = empty({kFingerprintSize}, TensorOptions(kInt64).device(device_));
  Tensor all = empty({kFingerprintSize * size_}, TensorOptions(kInt64).device(device_));
  int64_t host[kFingerprintSize];
  fingerprint(info, host);
  mine.copy_(from_vector(std::vector<int64_t>(host, host + kFingerprintSize)));

  Collective check;
  check.info.kind = OpKind::AllGather;
  check.info.sequence = info.sequence;
  check.info.dtype = kInt64;
  check.info.shape = {kFingerprintSize};
  check.input = mine;
  check.output = all;
  WorkPtr work = make_work(check.info);
  work->keep_alive({mine, all});
  start(check, work);
  work->wait();
  const std::vector<int64_t> got = all.cpu().to_vector<int64_t>();
  for (int r = 0; r < size_; ++r) {
    if (std::memcmp(&got[static_cast<size_t>(r) * kFingerprintSize], host,
                    sizeof(int64_t) * kFingerprintSize) != 0) {
      const std::string message =
          detail::concat("collectives differ across ranks: rank ", rank_, " called ",
                         info.describe(), " but rank ", r, " called ",
                         describe_fingerprint(&got[static_cast<size_t>(r) * kFingerprintSize]));
      abort(message);
      throw Error(detail::concat("loom.dist: ", who(), ": ", message));
    }
  }
}

}  // namespace loom::dist
