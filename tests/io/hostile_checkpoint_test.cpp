// Hostile checkpoints (issue 14): --resume reads a file a user may have downloaded, so deep
// JSON, duplicate keys, fractional or negative counters and tensors of the wrong dtype or
// shape must each end in a quick loom::Error naming the file and the problem.
#include <nlohmann/json.hpp>

#include "crafted_files.h"
#include "loom/io/checkpoint.h"

namespace loom {
namespace {

using testing::CraftedFiles;

class HostileCheckpoint : public CraftedFiles {
 protected:
  void SetUp() override {
    CraftedFiles::SetUp();
    Generator gen(2);
    model_ = std::make_shared<nn::Sequential>();
    model_->add(std::make_shared<nn::Linear>(3, 2, true, nn::Init::Keras, &gen));
    optimizer_ = std::make_unique<optim::Adam>(model_->parameters());
    mean(model_->forward(ones({1, 3}))).backward();
    optimizer_->step();
    io::TrainingState state;
    state.epoch = 1;
    state.step_in_epoch = 2;
    state.loss_sum = scalar_tensor(1.5);
    state.correct_sum = scalar_tensor(3.0);
    state.samples_seen = 4;
    state.history_json = R"([{"epoch":0,"loss":0.5}])";
    io::save_checkpoint(path("good.ckpt"), *model_, *optimizer_, state);
  }

  // The good checkpoint with one metadata value replaced, written to `name`.
  std::string with_metadata(const std::string& name, const std::string& key,
                            const std::string& value) {
    io::TensorFile file = io::load_safetensors(path("good.ckpt"));
    file.metadata[key] = value;
    io::save_safetensors(path(name), file.tensors, file.metadata);
    return path(name);
  }
  // The good checkpoint's loom.training JSON with one member replaced (as raw JSON text).
  std::string with_training(const std::string& name, const std::string& member,
                            const std::string& raw) {
    nlohmann::json training =
        nlohmann::json::parse(io::load_safetensors(path("good.ckpt")).metadata.at("loom.training"));
    training[member] = "@";
    std::string text = training.dump();
    text.replace(text.find("\"@\""), 3, raw);
    return with_metadata(name, "loom.training", text);
  }
  // The good checkpoint with one tensor replaced.
  std::string with_tensor(const std::string& name, const std::string& tensor, const Tensor& value) {
    io::TensorFile file = io::load_safetensors(path("good.ckpt"));
    if (file.tensors.contains(tensor)) file.tensors.at(tensor) = value;
    io::save_safetensors(path(name), file.tensors, file.metadata);
    return path(name);
  }

  std::shared_ptr<nn::Sequential> model_;
  std::unique_ptr<optim::Adam> optimizer_;
};

TEST_F(HostileCheckpoint, TheGoodOneLoads) {
  EXPECT_EQ(io::load_checkpoint(path("good.ckpt"), *model_, *optimizer_).epoch, 1);
}

TEST_F(HostileCheckpoint, DeepJsonInTheHistoryOrAnyMetadataIsRefused) {
  const std::string deep = testing::nested_arrays(100000);
  const std::string history = with_training("history.ckpt", "history", deep);
  EXPECT_REFUSED(io::read_checkpoint(history), history, "nested deeper than");
  EXPECT_REFUSED(io::load_checkpoint(history, *model_, *optimizer_), history, "nested deeper than");
  const std::string extra = with_training("extra.ckpt", "extra", deep);
  EXPECT_REFUSED(io::read_checkpoint(extra), extra, "nested deeper than");
  const std::string optim = with_metadata("optim.ckpt", "loom.optimizer", deep);
  EXPECT_REFUSED(io::load_checkpoint(optim, *model_, *optimizer_), optim, "nested deeper than");
}

TEST_F(HostileCheckpoint, DuplicateKeysAreRefused) {
  std::string text = io::load_safetensors(path("good.ckpt")).metadata.at("loom.training");
  text.insert(1, R"("epoch":7,)");
  const std::string training = with_metadata("training.ckpt", "loom.training", text);
  EXPECT_REFUSED(io::read_checkpoint(training), training, "duplicate key", "epoch");
  const std::string history =
      with_training("history.ckpt", "history", R"([{"epoch":0,"loss":0.5,"loss":9}])");
  EXPECT_REFUSED(io::load_checkpoint(history, *model_, *optimizer_), history, "duplicate key",
                 "loss");
  text = io::load_safetensors(path("good.ckpt")).metadata.at("loom.optimizer");
  text.insert(1, R"("type":"SGD",)");
  const std::string optim = with_metadata("optim.ckpt", "loom.optimizer", text);
  EXPECT_REFUSED(io::load_checkpoint(optim, *model_, *optimizer_), optim, "duplicate key", "type");
}

TEST_F(HostileCheckpoint, CountersAndSeedsMustBeIntegersInRange) {
  for (const auto& [member, raw] :
       std::vector<std::pair<std::string, std::string>>{{"epoch", "1.5"},
                                                        {"step_in_epoch", "-2"},
                                                        {"global_step", "1e3"},
                                                        {"samples_seen", "true"},
                                                        {"rng_seed", "-1"},
                                                        {"rng_offset", "0.5"},
                                                        {"loader_seed", "18446744073709551616"},
                                                        {"augment_seed", "\"7\""}}) {
    const std::string file = with_training("c.ckpt", member, raw);
    EXPECT_REFUSED(io::read_checkpoint(file), file, member);
  }
}

TEST_F(HostileCheckpoint, TheHistoryMustBeAListOfEpochMetrics) {
  for (const std::string& history :
       {R"([1, 2])", R"([{"epoch":0,"loss":"low"}])", R"([{"epoch":3,"loss":0.5}])",
        R"([{"epoch":0.5,"loss":0.5}])", R"({"epoch":0})", R"([[0.5]])"}) {
    const std::string file = with_training("h.ckpt", "history", history);
    EXPECT_REFUSED(io::load_checkpoint(file, *model_, *optimizer_), file, "history");
  }
}

TEST_F(HostileCheckpoint, TensorsOfAnotherDtypeOrShapeAreRefused) {
  const std::string weight = with_tensor("w.ckpt", "model.0.weight", zeros({2, 3}, kInt32));
  EXPECT_REFUSED(io::load_checkpoint(weight, *model_, *optimizer_), weight, "0.weight", "int32");
  std::string optim_name;
  for (const auto& [name, t] : io::load_safetensors(path("good.ckpt")).tensors) {
    if (name.rfind("optim.", 0) == 0 && t.shape() == Shape{2, 3}) optim_name = name;
  }
  ASSERT_FALSE(optim_name.empty());
  const std::string optim = with_tensor("o.ckpt", optim_name, zeros({2, 3}, kInt32));
  EXPECT_REFUSED(io::load_checkpoint(optim, *model_, *optimizer_), optim, optim_name, "int32");
  for (const Tensor& bad : {zeros({}, kInt32), zeros({2, 3}), zeros({2})}) {
    const std::string sums = with_tensor("s.ckpt", "train.loss_sum", bad);
    EXPECT_REFUSED(io::read_checkpoint(sums), sums, "train.loss_sum");
  }
}

TEST_F(HostileCheckpoint, UntrustedTextInMessagesIsCutShort) {
  const std::string huge(100000, 'x');
  const std::string spec = with_metadata("spec.ckpt", "loom.spec",
                                         R"({"type":"Identity","config":{"x":")" + huge + "\"}}");
  EXPECT_REFUSED(io::load_checkpoint(spec, *model_, *optimizer_), spec, "another architecture");
  const std::string kind = with_metadata("kind.ckpt", "loom.kind", huge);
  EXPECT_REFUSED(io::read_checkpoint(kind), kind, "not a checkpoint");
  const std::string history =
      with_training("h.ckpt", "history", R"([{"epoch":0,")" + huge + R"(":"s"}])");
  EXPECT_REFUSED(io::load_checkpoint(history, *model_, *optimizer_), history, "history", "xxxx");
}

}  // namespace
}  // namespace loom
