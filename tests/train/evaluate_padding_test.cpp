// train::pad_batch, evaluate's padding of a short last batch on CUDA: the rows it appends are
// zeros, the rows it keeps are the input's, and a batch that cannot be padded is an error.
#include "testing.h"

namespace loom {
namespace {

TEST(PadBatch, AppendsZeroRowsAndKeepsTheImages) {
  Generator gen(41);
  const Tensor images = uniform({3, 2, 4, 5}, 0.5, 1.5, kFloat32, &gen);
  const Tensor padded = train::pad_batch(images, 8);
  ASSERT_EQ(padded.shape(), (Shape{8, 2, 4, 5}));
  EXPECT_TENSOR_NEAR(padded.narrow(0, 0, 3), images, 0.0, 0.0);
  EXPECT_EQ(padded.narrow(0, 3, 5).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(padded.dtype(), images.dtype());
}

TEST(PadBatch, AFullBatchIsReturnedAsItIs) {
  Generator gen(42);
  const Tensor images = uniform({4, 3}, -1.0, 1.0, kFloat32, &gen);
  const Tensor same = train::pad_batch(images, 4);
  EXPECT_EQ(same.raw_data(), images.raw_data());
}

TEST(PadBatch, MoreRowsThanTheBatchIsAnError) {
  const Tensor images = ones({5, 2});
  EXPECT_LOOM_ERROR(train::pad_batch(images, 4), "pad_batch: 5 rows cannot be padded to 4");
}

}  // namespace
}  // namespace loom
