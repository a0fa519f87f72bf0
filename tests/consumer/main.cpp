// Uses only the installed public API: y = x @ w + 1, then backward; on a CUDA build with a GPU,
// the same on the GPU. Also checks that the package's CMake variable, the headers' constexpr
// and the library's own answer agree on the CUDA backend.
#include <loom/loom.h>

#include <cstdio>

#include "data/dataset.h"  // the user's own header, not loom's

namespace {

bool check_on(loom::Device device) {
  loom::Tensor x = loom::from_vector<float>({1, 2, 3, 4}, {2, 2}).to(device);
  loom::Tensor w = loom::ones({2, 2}, loom::TensorOptions().device(device).requires_grad());
  loom::Tensor y = loom::sum(loom::matmul(x, w) + 1.0);
  y.backward();
  const float value = y.item<float>();
  const std::vector<float> grad = w.grad().to(loom::kCPU).to_vector<float>();
  std::printf("%s: sum %.1f grad %.1f %.1f %.1f %.1f\n", device.str().c_str(), value, grad[0],
              grad[1], grad[2], grad[3]);
  // x @ ones = [[3,3],[7,7]] + 1 -> 24; d/dw = x^T @ ones = [[4,4],[6,6]]
  return value == 24.0f && grad[0] == 4.0f && grad[2] == 6.0f;
}

}  // namespace

int main() {
  if (user_project::dataset_marker() != 42) return 1;
  static_assert(loom::kBuiltWithCuda == (CONSUMER_EXPECTS_CUDA != 0),
                "loom/config.h and the CMake package disagree about CUDA");
  if (loom::built_with_cuda() != loom::kBuiltWithCuda) {
    std::printf("libloom says CUDA %d, its headers %d\n", loom::built_with_cuda(),
                loom::kBuiltWithCuda);
    return 1;
  }
  std::printf("loom %s, CUDA backend %s\n", loom::kVersion, loom::kBuiltWithCuda ? "yes" : "no");
  bool ok = check_on(loom::kCPU);
  if (loom::cuda_is_available()) ok = check_on(loom::kCUDA) && ok;
  return ok ? 0 : 1;
}
