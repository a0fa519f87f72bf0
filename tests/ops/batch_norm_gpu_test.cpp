// batch_norm on CUDA: CPU/CUDA parity of outputs, gradients and running statistics in
// training and eval.
#include "cnn_parity.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;

TEST(BatchNormCuda, MatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  // {16, 3, 24, 24}: 9216 elements per channel, summed in several chunks per channel.
  for (Shape shape : {Shape{8, 16, 10, 10}, Shape{32, 7}, Shape{2, 3, 5, 5}, Shape{16, 3, 24, 24}}) {
    Generator gen(shape[1]);
    const Tensor x = uniform(shape, -1.5, 2.5, kFloat32, &gen);
    const Tensor w = uniform({shape[1]}, 0.5, 1.5, kFloat32, &gen), b = randn({shape[1]}, kFloat32, &gen);
    SCOPED_TRACE("x " + shape_str(shape));
    expect_cuda_parity([](const std::vector<Tensor>& in) {
      return batch_norm(in[0], in[1], in[2], Tensor(), Tensor(), true);
    }, {x, w, b});
    const Tensor rm = randn({shape[1]}, kFloat32, &gen), rv = uniform({shape[1]}, 0.5, 2.0, kFloat32, &gen);
    const Tensor rm_gpu = rm.cuda(), rv_gpu = rv.cuda();
    expect_cuda_parity([rm, rv, rm_gpu, rv_gpu](const std::vector<Tensor>& in) {
      const bool gpu = in[0].is_cuda();
      return batch_norm(in[0], in[1], in[2], gpu ? rm_gpu : rm, gpu ? rv_gpu : rv, false);
    }, {x, w, b});
  }
}

TEST(BatchNormCuda, RunningStatisticsMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(6);
  Tensor rm = zeros({4}), rv = ones({4});
  Tensor rm_gpu = rm.cuda(), rv_gpu = rv.cuda();
  for (int step = 0; step < 3; ++step) {
    const Tensor x = uniform({6, 4, 3, 3}, -1.0, 3.0, kFloat32, &gen);
    batch_norm(x, Tensor(), Tensor(), rm, rv, true, 0.1);
    batch_norm(x.cuda(), Tensor(), Tensor(), rm_gpu, rv_gpu, true, 0.1);
  }
  EXPECT_TENSOR_NEAR(rm_gpu.cpu(), rm, 1e-6, 1e-5);
  EXPECT_TENSOR_NEAR(rv_gpu.cpu(), rv, 1e-6, 1e-5);
}

}  // namespace
}  // namespace loom
