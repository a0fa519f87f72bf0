// Device dispatch of the optimizer updates (one place, through LOOM_CUDA_DISPATCH) and the
// launch counter of the fused CUDA kernels.
#include "loom/optim/fused_update.h"

#include <atomic>

#include "loom/ops/dispatch.h"

namespace loom::optim {

namespace {
std::atomic<int64_t> launches{0};

// The launchers' contract: every tensor dense in its parameter's layout (NCHW or channels-last:
// the kernels walk memory in order), on the first parameter's device, of its dtype.
void check_lists(const std::vector<Tensor>& params,
                 std::initializer_list<const std::vector<Tensor>*> others) {
  for (const std::vector<Tensor>* list : others) {
    LOOM_ASSERT(list->empty() || list->size() == params.size());  // empty: SGD without momentum
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    LOOM_ASSERT(p.defined());
    const MemoryFormat format = p.suggest_memory_format();
    auto check = [&](const Tensor& t) {
      LOOM_ASSERT(t.defined() && t.shape() == p.shape() && t.is_contiguous(format),
                  "optimizer update needs dense tensors in their parameter's layout");
      LOOM_ASSERT(t.device() == params.front().device() && t.dtype() == params.front().dtype(),
                  "optimizer update mixes devices or dtypes");
    };
    check(p);
    for (const std::vector<Tensor>* list : others) {
      if (!list->empty()) check((*list)[i]);
    }
  }
}

bool on_cuda(const std::vector<Tensor>& tensors) {
  return !tensors.empty() && tensors.front().is_cuda();
}
}  // namespace

int64_t fused_kernel_launches() { return launches.load(); }

namespace detail {

void count_fused_launch() { launches.fetch_add(1); }

void adam_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                 const AdamConfig& config) {
  LOOM_ASSERT(grads.size() == params.size() && exp_avgs.size() == params.size() &&
              exp_avg_sqs.size() == params.size());
  check_lists(params, {&grads, &exp_avgs, &exp_avg_sqs});
  if (on_cuda(params)) {
    LOOM_CUDA_DISPATCH("Adam.step", cuda_fused_adam(params, grads, exp_avgs, exp_avg_sqs, config));
  } else {
    cpu_adam_update(params, grads, exp_avgs, exp_avg_sqs, config);
  }
}

void sgd_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& momentum_buffers, const SgdConfig& config) {
  LOOM_ASSERT(grads.size() == params.size());
  LOOM_ASSERT(momentum_buffers.size() == (config.momentum != 0.0 ? params.size() : 0));
  check_lists(params, {&grads, &momentum_buffers});
  if (on_cuda(params)) {
    LOOM_CUDA_DISPATCH("SGD.step", cuda_fused_sgd(params, grads, momentum_buffers, config));
  } else {
    cpu_sgd_update(params, grads, momentum_buffers, config);
  }
}

Tensor sum_of_squares(const std::vector<Tensor>& tensors) {
  check_lists(tensors, {});
  if (on_cuda(tensors)) {
    LOOM_CUDA_DISPATCH("clip_grad_norm_", return cuda_sum_of_squares(tensors));
  }
  return cpu_sum_of_squares(tensors);
}

void scale(const std::vector<Tensor>& tensors, double factor) {
  check_lists(tensors, {});
  if (on_cuda(tensors)) {
    LOOM_CUDA_DISPATCH("clip_grad_norm_", cuda_scale(tensors, factor));
  } else {
    cpu_scale(tensors, factor);
  }
}

}  // namespace detail
}  // namespace loom::optim
