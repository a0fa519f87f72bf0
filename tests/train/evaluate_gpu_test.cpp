// evaluate on CUDA pads a short last batch to the first batch's size: its results are the CPU's
// for the same model and images (plain and with flip TTA), and the padded pass chooses no
// convolution algorithms beyond the full batches' (every batch has one shape). A pass of one
// short batch, which is not padded, scores as on the CPU too.
#include <loom/loom.h>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

// `count` images in batches of 4 (13: three full batches and a last of 1).
void expect_cuda_matches_cpu(bool flip_tta, int64_t count = 13) {
  SCOPED_TRACE(flip_tta ? "flip TTA" : "plain");
  testing::HalvesDataset dataset(count, 17);
  auto model = testing::tiny_model(6, 8, false);
  const train::LossFn bce = train::binary_cross_entropy_loss();
  data::DataLoader cpu_loader(dataset, testing::loader_options(4, false));
  const train::EvalResult cpu =
      train::evaluate(*model, bce, cpu_loader, nullptr, {}, {}, false, false, flip_tta);

  model->to(kCUDA);
  data::DataLoaderOptions o = testing::loader_options(4, false);
  o.device = kCUDA;
  data::DataLoader cuda_loader(dataset, o);
  const int64_t searches_before = conv_algorithm_searches();
  const train::EvalResult cuda =
      train::evaluate(*model, bce, cuda_loader, nullptr, {}, {}, false, false, flip_tta);
  // One forward shape (batch 4): one search for it, none for a batch of 1.
  EXPECT_LE(conv_algorithm_searches() - searches_before, 1);

  ASSERT_EQ(cuda.samples, count);
  EXPECT_NEAR(cuda.loss, cpu.loss, 1e-5);
  EXPECT_DOUBLE_EQ(cuda.accuracy, cpu.accuracy);
  EXPECT_TENSOR_NEAR(cuda.confusion.to(kFloat64), cpu.confusion.to(kFloat64), 0.0, 0.0);
}

TEST(EvaluateGpu, AShortLastBatchIsPaddedAndScoresAsOnTheCpu) {
  LOOM_REQUIRE_CUDA();
  expect_cuda_matches_cpu(false);
}

TEST(EvaluateGpu, AShortLastBatchIsPaddedUnderFlipTtaToo) {
  LOOM_REQUIRE_CUDA();
  expect_cuda_matches_cpu(true);
}

TEST(EvaluateGpu, APassOfOneShortBatchScoresAsOnTheCpu) {
  LOOM_REQUIRE_CUDA();
  expect_cuda_matches_cpu(false, 3);
}

}  // namespace
}  // namespace loom
