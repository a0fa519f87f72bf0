// Uses only the installed public API: y = x @ w + 1, then backward; on a CUDA build with a GPU,
// the same on the GPU. Also checks that the package's CMake variable, the headers' constexpr
// and the library's own answer agree on the CUDA backend, and that libtorch's spellings
// (method forms, printed sizes, Adam(params, lr)) link from the installed package.
#include <loom/loom.h>

#include <cstdio>
#include <sstream>

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

// One Adam step of lr 0.1 from ones moves every element to about 0.9.
bool check_libtorch_forms() {
  loom::Tensor p = loom::ones({2, 3}).requires_grad_();
  loom::optim::Adam adam(std::vector<loom::Tensor>{p}, 0.1);
  p.mul(2.0).sum().backward();
  adam.step();
  std::ostringstream sizes;
  sizes << p.sizes();
  const float largest = p.abs().max().item<float>();
  std::printf("libtorch forms: sizes %s, largest after one step %.3f\n", sizes.str().c_str(),
              largest);
  return sizes.str() == "[2, 3]" && largest > 0.89f && largest < 0.91f;
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
  bool ok = check_on(loom::kCPU) && check_libtorch_forms();
  if (loom::cuda_is_available()) ok = check_on(loom::kCUDA) && ok;
  return ok ? 0 : 1;
}
