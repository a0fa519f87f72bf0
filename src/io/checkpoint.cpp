// Checkpoints: model + optimizer + loop state + RNG states in one atomically written file.
#include "io/checkpoint.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <thread>

#include "io/atomic_file.h"
#include "tensor/random.h"

namespace loom::io {

using nlohmann::json;

namespace {

constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimPrefix = "optim.";

std::string state_json(const TrainingState& s) {
  json j = {{"epoch", s.epoch},
            {"step_in_epoch", s.step_in_epoch},
            {"global_step", s.global_step},
            {"rng_seed", s.rng_seed},
            {"rng_offset", s.rng_offset},
            {"loader_seed", s.loader_seed},
            {"augment_seed", s.augment_seed},
            {"samples_seen", s.samples_seen},
            {"history", json::parse(s.history_json)},
            {"extra", s.extra}};
  return j.dump();
}

TrainingState parse_state(const std::string& text, const std::string& path) {
  TrainingState s;
  try {
    const json j = json::parse(text);
    s.epoch = j.at("epoch").get<int64_t>();
    s.step_in_epoch = j.at("step_in_epoch").get<int64_t>();
    s.global_step = j.at("global_step").get<int64_t>();
    s.rng_seed = j.at("rng_seed").get<uint64_t>();
    s.rng_offset = j.at("rng_offset").get<uint64_t>();
    s.loader_seed = j.at("loader_seed").get<uint64_t>();
    s.augment_seed = j.at("augment_seed").get<uint64_t>();
    s.samples_seen = j.at("samples_seen").get<int64_t>();
    s.history_json = j.at("history").dump();
    s.extra = j.at("extra").get<std::map<std::string, std::string>>();
  } catch (const json::exception& e) {
    throw Error(path + ": malformed loom.training metadata: " + e.what());
  }
  LOOM_CHECK(s.epoch >= 0 && s.step_in_epoch >= 0 && s.global_step >= 0 && s.samples_seen >= 0,
             path, ": negative counters in loom.training (epoch ", s.epoch, ", step ",
             s.step_in_epoch, ", global step ", s.global_step, ")");
  return s;
}

std::string optimizer_json(const optim::OptimizerState& state) {
  return json{{"type", state.optimizer}, {"scalars", state.scalars}}.dump();
}

// Writes the bytes in two halves so a crash test can stop the process in between.
void write_with_optional_pause(const std::string& path, const std::string& bytes) {
  const char* pause = std::getenv(kCheckpointPauseEnv);
  write_file_atomically(path, [&](const ByteSink& sink) {
    const size_t half = bytes.size() / 2;
    sink(bytes.data(), half);
    if (pause != nullptr && std::atoi(pause) > 0 && std::filesystem::exists(path)) {
      static const char kMessage[] = "loom: checkpoint write paused\n";
      [[maybe_unused]] const ssize_t n = ::write(2, kMessage, sizeof(kMessage) - 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(pause)));
    }
    sink(bytes.data() + half, bytes.size() - half);
  });
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                     const TrainingState& state, const Preprocessing& preprocessing) {
  NamedTensors tensors;
  for (const auto& [name, tensor] : model.state_dict()) tensors.emplace_back(kModelPrefix + name, tensor);
  const optim::OptimizerState optim_state = optimizer.state_dict();
  for (const auto& [name, tensor] : optim_state.tensors) tensors.emplace_back(kOptimPrefix + name, tensor);
  LOOM_CHECK(state.loss_sum.defined() == state.correct_sum.defined(), "save_checkpoint(", path,
             "): loss_sum and correct_sum must both be set or both be empty");
  if (state.loss_sum.defined()) {
    tensors.emplace_back("train.loss_sum", state.loss_sum);
    tensors.emplace_back("train.correct_sum", state.correct_sum);
  }
  Metadata metadata = detail::model_metadata(model, preprocessing, "checkpoint");
  metadata["loom.optimizer"] = optimizer_json(optim_state);
  metadata["loom.training"] = state_json(state);
  write_with_optional_pause(path, serialize_safetensors(tensors, metadata));
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint out;
  out.file = load_safetensors(path);
  const Metadata& m = out.file.metadata;
  const std::string& kind = detail::require_metadata(m, "loom.kind", path);
  LOOM_CHECK(kind == "checkpoint", path, ": is a loom ", kind, " file, not a checkpoint");
  out.state = parse_state(detail::require_metadata(m, "loom.training", path), path);
  out.preprocessing = Preprocessing::from_json(detail::require_metadata(m, "loom.preprocessing", path), path);
  for (const auto& [name, tensor] : out.file.tensors) {
    if (name == "train.loss_sum") out.state.loss_sum = tensor;
    if (name == "train.correct_sum") out.state.correct_sum = tensor;
  }
  return out;
}

TrainingState load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer) {
  Checkpoint ckpt = read_checkpoint(path);
  const Metadata& m = ckpt.file.metadata;
  const std::string& spec = detail::require_metadata(m, "loom.spec", path);
  LOOM_CHECK(spec == model.spec_json(), path, ": the checkpoint is of another architecture than the "
             "model being trained (its spec ", spec.substr(0, 200), " vs ", model.spec_json().substr(0, 200), ")");

  optim::OptimizerState optim_state;
  try {
    const json j = json::parse(detail::require_metadata(m, "loom.optimizer", path));
    optim_state.optimizer = j.at("type").get<std::string>();
    optim_state.scalars = j.at("scalars").get<std::map<std::string, double>>();
  } catch (const json::exception& e) {
    throw Error(path + ": malformed loom.optimizer metadata: " + e.what());
  }
  nn::NamedTensors model_state;
  const std::string model_prefix = kModelPrefix, optim_prefix = kOptimPrefix;
  for (const auto& [name, tensor] : ckpt.file.tensors) {
    if (name.compare(0, model_prefix.size(), model_prefix) == 0) {
      model_state.insert(name.substr(model_prefix.size()), tensor);
    } else if (name.compare(0, optim_prefix.size(), optim_prefix) == 0) {
      optim_state.tensors[name.substr(optim_prefix.size())] = tensor;
    }
  }
  // Each load checks everything before it copies; a failure here ends the resume, so a model
  // loaded before an optimizer mismatch is never trained on.
  try {
    model.load_state_dict(model_state, /*strict=*/true);
  } catch (const Error& e) {
    throw Error(path + ": the checkpoint's weights do not fit the model: " + e.what());
  }
  try {
    optimizer.load_state_dict(optim_state);
  } catch (const Error& e) {
    throw Error(path + ": the checkpoint's optimizer state does not fit: " + e.what());
  }
  const Device device = model.device();
  if (ckpt.state.loss_sum.defined()) {
    ckpt.state.loss_sum = ckpt.state.loss_sum.to(device);
    ckpt.state.correct_sum = ckpt.state.correct_sum.to(device);
  }
  default_generator().set_state(ckpt.state.rng_seed, ckpt.state.rng_offset);
  return ckpt.state;
}

}  // namespace loom::io
