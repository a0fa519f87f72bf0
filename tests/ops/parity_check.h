// CPU/CUDA parity for one op: f runs on CPU leaves and on CUDA copies of them; the outputs and
// the gradients of <f(x), w> for one random w must agree. Used by the *_gpu_test.cpp files of
// reductions, softmax, matrix products and shape ops.
#pragma once

#include <vector>

#include "testing.h"

namespace loom::testing {

inline void expect_cuda_parity(const Function& f, const std::vector<Tensor>& inputs,
                               double atol = 1e-5, double rtol = 1e-4) {
  std::vector<Tensor> cpu, gpu;
  for (const Tensor& t : inputs) {
    Tensor c = t.detach().clone();
    Tensor g = c.to(kCUDA);
    if (is_floating(c.dtype())) {
      c.requires_grad_();
      g.requires_grad_();
    }
    cpu.push_back(c);
    gpu.push_back(g);
  }
  const Tensor out_cpu = f(cpu), out_gpu = f(gpu);
  ASSERT_TRUE(out_gpu.is_cuda());
  EXPECT_TENSOR_NEAR(out_gpu.cpu(), out_cpu, atol, rtol);
  if (!out_cpu.requires_grad()) return;
  Generator gen(99);
  const Tensor w = randn(out_cpu.shape(), out_cpu.dtype(), &gen);
  out_cpu.backward(w);
  out_gpu.backward(w.to(kCUDA));
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!cpu[i].requires_grad()) continue;
    ASSERT_TRUE(gpu[i].grad().defined()) << "input " << i << " got no gradient on CUDA";
    EXPECT_TENSOR_NEAR(gpu[i].grad().cpu(), cpu[i].grad(), atol, rtol);
  }
}

}  // namespace loom::testing
