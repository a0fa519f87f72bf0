// DistributedDataParallel: a Module that wraps a model so that N ranks train it as one. At
// construction every rank's parameters are checked against rank 0's and set to rank 0's
// values; during backward each bucket of gradients is averaged across ranks as soon as its
// last gradient is ready, while the rest of backward goes on; before backward returns, the
// compute stream waits (an event, not the host) for every bucket, so the optimizer step is
// unchanged. Gradients live in one flat arena per (device, dtype), in reverse registration
// order, so a bucket is a contiguous slice that NCCL reduces in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/distributed/process_group.h"
#include "loom/nn/module.h"

namespace loom::dist {

struct DdpOptions {
  // All gradients in one bucket when they total less than this; otherwise a first bucket of
  // first_bucket_bytes (backward's first gradients start communicating early) and then
  // buckets of bucket_bytes. A parameter is never split across buckets.
  size_t single_bucket_bytes = size_t(4) << 20;
  size_t first_bucket_bytes = size_t(1) << 20;
  size_t bucket_bytes = size_t(25) << 20;
  // A parameter that gets no gradient in a backward is an error naming it, unless this is set:
  // then it is reduced with the gradient it holds (zeros after zero_grad).
  bool find_unused_parameters = false;
  // Rank 0's buffers (BatchNorm's running statistics) are sent to every rank before each
  // forward in training mode, as PyTorch does.
  bool broadcast_buffers = true;
};

// One bucket of the layout, for reports and tests.
struct BucketInfo {
  Device device;
  DType dtype = kFloat32;
  int64_t offset = 0;                   // elements into its arena
  int64_t numel = 0;                    // elements, padding included
  std::vector<std::string> parameters;  // in the order backward usually fills them
};

// What the last backward did, for tests and benchmarks.
struct DdpStepStats {
  int buckets = 0;
  int launched_during_backward = 0;  // all-reduces started from gradient hooks
  int launched_at_end = 0;           // started by the end-of-backward callback
  // Buckets whose gradients were all ready while an earlier bucket still waited for one: they
  // start late, because buckets start in index order (the order every rank agrees on). Zero
  // when backward fills the buckets in their layout's order, as it does for loom's zoo models;
  // PyTorch rebuilds its buckets after the first step for models where it is not.
  int held_back = 0;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Throws on every rank, naming the first difference and the ranks, when the ranks' models
  // differ in parameter names, shapes or dtypes; and when a parameter is not on the group's
  // device.
  DistributedDataParallel(nn::ModulePtr module, GroupPtr group, DdpOptions options = {});
  ~DistributedDataParallel() override;

  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "DistributedDataParallel"; }

  // The wrapped model (save this one: its parameters are the trained ones on every rank).
  const nn::ModulePtr& module() const { return module_; }
  nn::Module& unwrapped() override { return *module_; }
  bool set_gradient_sync(bool on) override;
  ProcessGroup& group() const { return *group_; }
  const std::vector<BucketInfo>& buckets() const;
  DdpStepStats last_step() const;

  // For benchmarks (loom-scaling): while on, every synchronising backward measures how long
  // the compute stream stalls at its end waiting for the buckets' all-reduces: the
  // communication that backward did not hide (device events on a GPU, so the step is not
  // slowed by a host wait; the host clock on the CPU). exposed_communication_ms() returns those
  // stalls since its last call, in order, waiting for the last one on a GPU. `steps`: how many
  // backwards will be timed, so that their events are made now and not inside the steps.
  void time_exposed_communication(bool on, int steps = 0);
  std::vector<double> exposed_communication_ms();

  // While a NoSync lives, backward only accumulates gradients locally (gradient accumulation);
  // the first backward after it averages what was accumulated.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  struct Reducer;  // the bucketing and hook state, in ddp.cpp

 private:
  nn::ModulePtr module_;
  GroupPtr group_;
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace loom::dist
