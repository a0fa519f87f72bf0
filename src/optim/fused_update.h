// The update launchers behind the optimizers and gradient clipping. Each takes lists of
// contiguous tensors of one device and dtype and runs them on that device: plain loops on the
// CPU, and on CUDA multi-tensor kernels that update many tensors per launch (cuda/*.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::optim {

// Kernel launches issued by the fused CUDA updates since the program started (tests use it to
// check that a step is a few launches, not one per tensor per operation).
int64_t fused_kernel_launches();

namespace detail {

void count_fused_launch();

// Adam/AdamW hyperparameters of one step, already folded (see AdamCoeffs in update_math.h).
struct AdamConfig {
  double beta1, beta2, weight_decay, decay_factor, step_size, inv_sqrt_bc2, eps_term;
  bool decoupled;
};

struct SgdConfig {
  double lr, weight_decay, momentum, dampening;
  bool nesterov;
  bool first_step;
};

// exp_avgs and exp_avg_sqs are shaped like params; all lists of equal length.
void adam_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                 const AdamConfig& config);
// momentum_buffers is empty when config.momentum == 0.
void sgd_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& momentum_buffers, const SgdConfig& config);
// Sum of the squares of every element, accumulated in double. On CUDA the result stays on the
// device (a one-element float64 tensor) so several devices can be summed with one read each.
Tensor sum_of_squares(const std::vector<Tensor>& tensors);
// Multiplies every element by factor, in place.
void scale(const std::vector<Tensor>& tensors, double factor);

// Backends: same contracts as above.
void cpu_adam_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                     const AdamConfig& config);
void cuda_fused_adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                     const AdamConfig& config);
void cpu_sgd_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                    const std::vector<Tensor>& momentum_buffers, const SgdConfig& config);
void cuda_fused_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                    const std::vector<Tensor>& momentum_buffers, const SgdConfig& config);
Tensor cpu_sum_of_squares(const std::vector<Tensor>& tensors);
Tensor cuda_sum_of_squares(const std::vector<Tensor>& tensors);
void cpu_scale(const std::vector<Tensor>& tensors, double factor);
void cuda_scale(const std::vector<Tensor>& tensors, double factor);

}  // namespace detail
}  // namespace loom::optim
