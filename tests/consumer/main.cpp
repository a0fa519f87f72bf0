// Uses only the installed public API: y = x @ w + 1, then backward.
#include <loom/loom.h>

#include <cstdio>

int main() {
  loom::Tensor x = loom::from_vector<float>({1, 2, 3, 4}, {2, 2});
  loom::Tensor w = loom::ones({2, 2}, loom::TensorOptions().requires_grad());
  loom::Tensor y = loom::sum(loom::matmul(x, w) + 1.0);
  y.backward();
  const float value = y.item<float>();
  const std::vector<float> grad = w.grad().to_vector<float>();
  std::printf("sum %.1f grad %.1f %.1f %.1f %.1f\n", value, grad[0], grad[1], grad[2], grad[3]);
  // x @ ones = [[3,3],[7,7]] + 1 -> 24; d/dw = x^T @ ones = [[4,4],[6,6]]
  return value == 24.0f && grad[0] == 4.0f && grad[2] == 6.0f ? 0 : 1;
}
