// loom-catdog export --onnx: a model file becomes the ONNX file io::onnx_model_bytes makes of it
// (with the class names and preprocessing as metadata, logits or --probabilities); a missing
// model or an unwritable --onnx is refused naming it, before anything is written. The graph's
// bytes are checked in tests/io/onnx_export_test.cpp and run by onnxruntime in
// tests/reference/onnx_export.py.
#include "app_runner.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class CatdogExport : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             ("loom_catdog_export_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(CatdogExport, AModelFileBecomesTheLibrarysOnnxBytes) {
  Generator gen(9);
  io::Preprocessing prep;
  prep.class_names = {"cat", "dog", "fox"};
  io::save_model(root_ + "/m.st", *nn::classic_cnn(3, nn::Init::PyTorch, &gen), prep);
  for (const bool probabilities : {false, true}) {
    std::vector<std::string> args{"export", "--model", root_ + "/m.st", "--onnx",
                                  root_ + "/m.onnx"};
    if (probabilities) args.push_back("--probabilities");
    const auto [status, out] = testing::run_to_end(args, root_ + "/export");
    ASSERT_EQ(status, 0) << out;
    EXPECT_NE(out.find("ONNX opset 17"), std::string::npos) << out;
    EXPECT_NE(out.find("[N, 3, 64, 64]"), std::string::npos) << out;
    EXPECT_NE(out.find(probabilities ? "probabilities of 3 classes" : "logits of 3 classes"),
              std::string::npos)
        << out;

    const io::LoadedModel loaded = io::load_model(root_ + "/m.st");
    io::OnnxExportOptions options;
    options.probabilities = probabilities;
    options.metadata = {{"loom.class_names", "cat,dog,fox"},
                        {"loom.preprocessing", loaded.preprocessing.to_json()},
                        {"loom.exported_from", root_ + "/m.st"}};
    EXPECT_EQ(io::read_file(root_ + "/m.onnx"),
              io::onnx_model_bytes(*loaded.model, {3, 64, 64}, options));
  }
}

TEST_F(CatdogExport, WhatCannotBeReadOrWrittenIsNamed) {
  testing::expect_prompt_error(
      {"export", "--model", root_ + "/missing.st", "--onnx", root_ + "/m.onnx"}, root_ + "/missing",
      {root_ + "/missing.st"});
  io::save_model(root_ + "/m.st", *nn::seed_cnn(), io::Preprocessing{});
  testing::expect_prompt_error(
      {"export", "--model", root_ + "/m.st", "--onnx", root_ + "/no/such/folder/m.onnx"},
      root_ + "/folder", {"--onnx", root_ + "/no/such/folder"});
  testing::expect_prompt_error({"export", "--model", root_ + "/m.st"}, root_ + "/required",
                               {"--onnx"});
  EXPECT_FALSE(fs::exists(root_ + "/m.onnx"));
}

}  // namespace
}  // namespace loom
