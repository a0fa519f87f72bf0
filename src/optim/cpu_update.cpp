// CPU backend of the optimizer updates: one threaded loop per tensor over contiguous data,
// applying the element rules of update_math.h.
#include <algorithm>

#include "loom/optim/fused_update.h"
#include "loom/optim/update_math.h"
#include "loom/tensor/dtype.h"
#include "loom/tensor/parallel.h"

namespace loom::optim::detail {

namespace {
// Outside the dispatch macro: a #pragma cannot sit inside a macro argument.
template <typename T>
double squares_of(const T* x, int64_t n) {
  double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  return sum;
}

// The coefficients are taken by value and the arrays as restrict pointers: otherwise a store
// to p[i] might alias a coefficient, and the compiler reloads them and does not vectorise.
template <typename T>
void adam_span(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
               const AdamCoeffs<T> c) {
  for (int64_t i = 0; i < n; ++i) adam_element(p[i], g[i], m[i], v[i], c);
}

}  // namespace

void cpu_adam_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                     const AdamConfig& config) {
  if (params.empty()) return;
  LOOM_DISPATCH_FLOATING(params.front().dtype(), "Adam.step", [&] {
    using T = scalar_t;
    const AdamCoeffs<T> c = adam_coeffs<T>(config);
    for (size_t k = 0; k < params.size(); ++k) {
      T* p = params[k].data_ptr<T>();
      const T* g = grads[k].data_ptr<T>();
      T* m = exp_avgs[k].data_ptr<T>();
      T* v = exp_avg_sqs[k].data_ptr<T>();
      parallel_chunks(params[k].numel(), [&](int64_t, int64_t begin, int64_t end) {
        adam_span(p + begin, g + begin, m + begin, v + begin, end - begin, c);
      });
    }
  });
}

void cpu_sgd_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                    const std::vector<Tensor>& momentum_buffers, const SgdConfig& config) {
  if (params.empty()) return;
  LOOM_DISPATCH_FLOATING(params.front().dtype(), "SGD.step", [&] {
    using T = scalar_t;
    const SgdCoeffs<T> c = sgd_coeffs<T>(config);
    for (size_t k = 0; k < params.size(); ++k) {
      T* p = params[k].data_ptr<T>();
      const T* g = grads[k].data_ptr<T>();
      T* buf = c.use_momentum ? momentum_buffers[k].data_ptr<T>() : nullptr;
      parallel_for(params[k].numel(),
                   [&](int64_t i) { sgd_element(p[i], g[i], buf ? buf + i : nullptr, c); });
    }
  });
}

Tensor cpu_sum_of_squares(const std::vector<Tensor>& tensors) {
  double total = 0.0;
  for (const Tensor& t : tensors) {
    LOOM_DISPATCH_FLOATING(t.dtype(), "clip_grad_norm_",
                           [&] { total += squares_of(t.data_ptr<scalar_t>(), t.numel()); });
  }
  return scalar_tensor(total, kFloat64);
}

void cpu_scale(const std::vector<Tensor>& tensors, double factor) {
  for (const Tensor& t : tensors) {
    LOOM_DISPATCH_FLOATING(t.dtype(), "clip_grad_norm_", [&] {
      scalar_t* x = t.data_ptr<scalar_t>();
      const scalar_t f = static_cast<scalar_t>(factor);
      parallel_for(t.numel(), [&](int64_t i) { x[i] *= f; });
    });
  }
}

}  // namespace loom::optim::detail
