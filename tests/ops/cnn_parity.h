// CPU/CUDA parity for the CNN ops' gpu tests: the same op on the same float32 values on both
// devices, outputs and gradients compared.
#pragma once

#include <functional>
#include <vector>

#include "testing.h"

namespace loom::testing {

// Runs f on CPU leaves holding `values` and on CUDA leaves holding the same values, then
// backward from a random weighting of the output; EXPECTs the outputs and every input's
// gradient to agree within atol + rtol * |cpu|. Convolutions run in full float32 (no TF32),
// which these tolerances assume.
inline void expect_cuda_parity(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                               const std::vector<Tensor>& values, double atol = 1e-4,
                               double rtol = 1e-4) {
  const ConvTf32Scope full_float32(false);
  std::vector<Tensor> cpu, gpu;
  for (const Tensor& v : values) {
    cpu.push_back(v.clone().set_requires_grad(true));
    gpu.push_back(v.cuda().set_requires_grad(true));
  }
  const Tensor y_cpu = f(cpu);
  const Tensor y_gpu = f(gpu);
  ASSERT_TRUE(y_gpu.is_cuda());
  EXPECT_TENSOR_NEAR(y_gpu.cpu(), y_cpu, atol, rtol);
  Generator gen(2024);
  const Tensor w = randn(y_cpu.shape(), y_cpu.dtype(), &gen);
  y_cpu.backward(w);
  y_gpu.backward(w.cuda());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(cpu[i].grad().defined() && gpu[i].grad().defined()) << "input " << i;
    ASSERT_TRUE(gpu[i].grad().is_cuda()) << "input " << i;
    const std::string problem = compare(gpu[i].grad().cpu(), cpu[i].grad(), atol, rtol);
    EXPECT_TRUE(problem.empty()) << "gradient of input " << i << ": " << problem;
  }
}

}  // namespace loom::testing
