// batch_norm on CUDA: the case table (batch_norm_cases.h) against the CPU, running statistics
// against the CPU's, batch_norm_relu against the two ops on the GPU.
#include "batch_norm_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(BatchNorm, testing::batch_norm_cases, Cuda)

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

// On one device the fused op and relu(batch_norm) evaluate the same expressions and sum in the
// same order (a masked element adds nothing either way): equal bit for bit, in float32 and
// bfloat16, NCHW and channels-last, vectorised (64 channels) or not (37).
TEST(BatchNormCuda, FusedReluEqualsTheTwoOpsBitForBit) {
  LOOM_REQUIRE_CUDA();
  for (DType dtype : {kFloat32, kBFloat16}) {
    for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      for (Shape shape : {Shape{4, 64, 12, 12}, Shape{3, 37, 5, 5}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) +
                     (format == MemoryFormat::ChannelsLast ? " NHWC " : " NCHW ") +
                     shape_str(shape));
        Generator gen(shape[1] + 7);
        const Tensor x0 = randn(shape, kFloat32, &gen).to(dtype).cuda().contiguous(format);
        const Tensor w0 = uniform({shape[1]}, -1.5, 1.5, kFloat32, &gen).cuda();
        const Tensor b0 = randn({shape[1]}, kFloat32, &gen).cuda();
        const Tensor upstream = randn(shape, kFloat32, &gen).to(dtype).cuda();
        auto run = [&](bool fused) {
          Tensor x = x0.clone().contiguous(format).set_requires_grad(true);
          Tensor w = w0.clone().set_requires_grad(true), b = b0.clone().set_requires_grad(true);
          const Tensor y = fused ? batch_norm_relu(x, w, b, Tensor(), Tensor(), true)
                                 : relu(batch_norm(x, w, b, Tensor(), Tensor(), true));
          y.backward(upstream);
          return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
        };
        const auto fused = run(true), composed = run(false);
        EXPECT_EQ(fused[0].suggest_memory_format(), format);
        for (size_t i = 0; i < fused.size(); ++i) {
          EXPECT_EQ(fused[i].cpu().to_vector<double>(), composed[i].cpu().to_vector<double>())
              << "result " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom
