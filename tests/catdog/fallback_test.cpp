// The README's main job on a machine without photographs: loom-catdog's Fashion-MNIST fallback
// trains through the same library and writes a model file that predicts 10 classes, on one rank
// or on several.
#include <unistd.h>

#include <filesystem>

#include "catdog/fashion_fallback.h"
#include "testing.h"

namespace loom {
namespace {

TEST(FashionFallback, TrainsASubsetAndSavesAModel) {
  if (!std::filesystem::exists(std::string(data::kFashionMnistDir) +
                               "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  }
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("loom_fallback_" + std::to_string(::getpid()) + ".st"))
                              .string();
  catdog::TrainArgs args;
  args.epochs = 1;
  args.limit = 512;
  args.batch_size = 64;
  args.device = "cpu";
  args.workers = 1;
  args.out = out;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(catdog::train_fashion_fallback(args), 0);
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(text.find("Fashion-MNIST test accuracy: 0."), std::string::npos) << text;
  const io::LoadedModel m = io::load_model(out);
  EXPECT_EQ(m.preprocessing.class_names.size(), 10u);
  EXPECT_EQ(m.preprocessing.channels, 1);
  std::filesystem::remove(out);
}

TEST(FashionFallback, TrainsOnTwoThreadRanks) {
  if (!std::filesystem::exists(std::string(data::kFashionMnistDir) +
                               "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  }
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("loom_fallback_ranks_" + std::to_string(::getpid()) + ".st"))
                              .string();
  catdog::TrainArgs args;
  args.epochs = 1;
  args.limit = 512;
  args.batch_size = 32;  // per rank: 8 steps of 64 samples
  args.device = "cpu";
  args.workers = 0;
  args.world_size = 2;
  args.out = out;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(catdog::train_fashion_fallback(args), 0);
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(text.find("world size 2 (threads, threads), batch 32 per rank, 64 global"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Fashion-MNIST test accuracy: 0."), std::string::npos) << text;
  EXPECT_EQ(io::load_model(out).preprocessing.class_names.size(), 10u);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace loom
