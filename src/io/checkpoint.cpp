// Checkpoints: model + optimizer + loop state + RNG states in one atomically written file.
#include "loom/io/checkpoint.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "loom/io/atomic_file.h"
#include "loom/nn/untrusted_json.h"
#include "loom/tensor/random.h"

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

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

std::vector<std::map<std::string, double>> epoch_metrics(const json& list,
                                                         const std::string& where) {
  LOOM_CHECK(list.is_array(), where, ": expected a list of per-epoch objects, got ",
             nn::json_excerpt(list));
  std::vector<std::map<std::string, double>> epochs;
  for (size_t e = 0; e < list.size(); ++e) {
    const std::string entry = where + ": epoch " + std::to_string(e);
    const nn::JsonObject metrics(list[e], entry);
    if (metrics.has("epoch")) {
      const int64_t epoch = metrics.integer("epoch", 0, kMaxCount);
      LOOM_CHECK(epoch == static_cast<int64_t>(e), metrics.member("epoch"), " is ", epoch,
                 "; the entries must be the epochs from 0 in order");
    }
    std::map<std::string, double> values;
    for (auto it = list[e].begin(); it != list[e].end(); ++it) {
      if (it.key() == "epoch") continue;
      values[it.key()] = nn::json_number(it.value(), entry + ": \"" + nn::excerpt(it.key()) + "\"");
    }
    epochs.push_back(std::move(values));
  }
  return epochs;
}

TrainingState parse_state(const std::string& text, const std::string& path) {
  const std::string where = path + ": loom.training";
  const json j = nn::parse_untrusted_json(text, where);
  const nn::JsonObject c(j, where);
  TrainingState s;
  s.epoch = c.integer("epoch", 0, kMaxCount);
  s.step_in_epoch = c.integer("step_in_epoch", 0, kMaxCount);
  s.global_step = c.integer("global_step", 0, kMaxCount);
  s.rng_seed = c.unsigned_integer("rng_seed");
  s.rng_offset = c.unsigned_integer("rng_offset");
  s.loader_seed = c.unsigned_integer("loader_seed");
  s.augment_seed = c.unsigned_integer("augment_seed");
  s.samples_seen = c.integer("samples_seen", 0, kMaxCount);
  epoch_metrics(c.at("history"),
                path + ": malformed history");  // checked here, where the file is known
  s.history_json = c.at("history").dump();
  const json& extra = c.at("extra");
  LOOM_CHECK(extra.is_object(), c.member("extra"), " must be an object of strings, got ",
             nn::json_excerpt(extra));
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    LOOM_CHECK(it.value().is_string(), c.member("extra"), " value of \"", nn::excerpt(it.key()),
               "\" must be a string, got ", nn::json_excerpt(it.value()));
    s.extra[it.key()] = it.value().get<std::string>();
  }
  return s;
}

// The partial epoch's sums: both or neither, floating-point, a scalar or one value per rank.
void check_running_sums(const Tensor& loss, const Tensor& correct, const std::string& path) {
  LOOM_CHECK(loss.defined() == correct.defined(), path,
             ": train.loss_sum and train.correct_sum must be both present or both absent");
  if (!loss.defined()) return;
  using Named = std::pair<const char*, const Tensor*>;
  for (const auto& [name, t] :
       {Named{"train.loss_sum", &loss}, Named{"train.correct_sum", &correct}}) {
    LOOM_CHECK(is_floating(t->dtype()) && t->dim() <= 1 && t->numel() >= 1, path, ": ", name,
               " must be a floating-point scalar or a vector of one value per rank, got ",
               dtype_name(t->dtype()), " ", nn::excerpt(shape_str(t->shape())));
  }
  LOOM_CHECK(loss.shape() == correct.shape(), path, ": train.loss_sum has shape ",
             shape_str(loss.shape()), " but train.correct_sum ", shape_str(correct.shape()));
}

std::string optimizer_json(const optim::OptimizerState& state) {
  return json{{"type", state.optimizer}, {"scalars", state.scalars}}.dump();
}

// Writes the snapshot, pausing once half of its bytes are written when kCheckpointPauseEnv asks
// for it, so that a crash test can stop the process in between.
PreparedFile with_optional_pause(const std::string& path,
                                 std::shared_ptr<const SafetensorsSnapshot> snapshot) {
  const char* pause = std::getenv(kCheckpointPauseEnv);
  const int pause_ms = pause != nullptr ? std::atoi(pause) : 0;
  return PreparedFile(path, [path, pause_ms, snapshot](const ByteSink& sink) {
    if (pause_ms <= 0) return snapshot->write(sink);
    const uint64_t half = snapshot->size() / 2;
    uint64_t written = 0;
    snapshot->write([&](const void* data, size_t size) {
      const char* bytes = static_cast<const char*>(data);
      const bool crosses = written < half && written + size >= half;
      const size_t before = crosses ? static_cast<size_t>(half - written) : size;
      sink(bytes, before);
      written += before;
      if (crosses && std::filesystem::exists(path)) {
        static const char kMessage[] = "loom: checkpoint write paused\n";
        [[maybe_unused]] const ssize_t n = ::write(2, kMessage, sizeof(kMessage) - 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      }
      if (before < size) {
        sink(bytes + before, size - before);
        written += size - before;
      }
    });
  });
}

}  // namespace

PreparedFile prepare_checkpoint(const std::string& path, const nn::Module& model,
                                const optim::Optimizer& optimizer, const TrainingState& state,
                                const Preprocessing& preprocessing) {
  NamedTensors tensors;
  for (const auto& [name, tensor] : model.state_dict()) tensors.insert(kModelPrefix + name, tensor);
  // The snapshot below copies every tensor, the optimizer's buffers too.
  const optim::OptimizerState optim_state = optimizer.state_references();
  for (const auto& [name, tensor] : optim_state.tensors)
    tensors.insert(kOptimPrefix + name, tensor);
  LOOM_CHECK(state.loss_sum.defined() == state.correct_sum.defined(), "save_checkpoint(", path,
             "): loss_sum and correct_sum must both be set or both be empty");
  if (state.loss_sum.defined()) {
    tensors.insert("train.loss_sum", state.loss_sum);
    tensors.insert("train.correct_sum", state.correct_sum);
  }
  Metadata metadata = detail::model_metadata(model, preprocessing, "checkpoint");
  metadata["loom.optimizer"] = optimizer_json(optim_state);
  metadata["loom.training"] = state_json(state);
  return with_optional_pause(path, std::make_shared<const SafetensorsSnapshot>(tensors, metadata));
}

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, const TrainingState& state,
                     const Preprocessing& preprocessing) {
  write_file_atomically(prepare_checkpoint(path, model, optimizer, state, preprocessing));
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint out;
  out.file = load_safetensors(path);
  const Metadata& m = out.file.metadata;
  const std::string& kind = detail::require_metadata(m, "loom.kind", path);
  LOOM_CHECK(kind == "checkpoint", path, ": is a loom ", nn::excerpt(kind),
             " file, not a checkpoint");
  out.state = parse_state(detail::require_metadata(m, "loom.training", path), path);
  out.preprocessing =
      Preprocessing::from_json(detail::require_metadata(m, "loom.preprocessing", path), path);
  for (const auto& [name, tensor] : out.file.tensors) {
    if (name == "train.loss_sum") out.state.loss_sum = tensor;
    if (name == "train.correct_sum") out.state.correct_sum = tensor;
  }
  check_running_sums(out.state.loss_sum, out.state.correct_sum, path);
  return out;
}

TrainingState load_checkpoint(const std::string& path, nn::Module& model,
                              optim::Optimizer& optimizer) {
  Checkpoint ckpt = read_checkpoint(path);
  const Metadata& m = ckpt.file.metadata;
  const std::string& spec = detail::require_metadata(m, "loom.spec", path);
  LOOM_CHECK(spec == model.spec_json(), path,
             ": the checkpoint is of another architecture than the "
             "model being trained (its spec ",
             nn::excerpt(spec), " vs ", nn::excerpt(model.spec_json()), ")");

  optim::OptimizerState optim_state;
  const std::string optim_where = path + ": loom.optimizer";
  const json optim_json =
      nn::parse_untrusted_json(detail::require_metadata(m, "loom.optimizer", path), optim_where);
  const nn::JsonObject o(optim_json, optim_where);
  optim_state.optimizer = o.string("type");
  const json& scalars = o.at("scalars");
  LOOM_CHECK(scalars.is_object(), o.member("scalars"), " must be an object of numbers, got ",
             nn::json_excerpt(scalars));
  for (auto it = scalars.begin(); it != scalars.end(); ++it) {
    const std::string what = o.member("scalars") + " \"" + nn::excerpt(it.key()) + "\"";
    optim_state.scalars[it.key()] = nn::json_number(it.value(), what);
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
  // Everything is checked before anything is copied, and dtypes are never converted: an int32
  // tensor in place of a float one is a corrupt or crafted file, not a value to round.
  const std::string misfit = path + ": the checkpoint's weights do not fit the model";
  detail::check_tensors_fit(model.state_layout(), model_state, misfit);
  std::set<DType> param_dtypes;
  for (const Tensor& p : model.parameters()) param_dtypes.insert(p.dtype());
  for (const auto& [key, tensor] : optim_state.tensors) {
    LOOM_CHECK(param_dtypes.count(tensor.dtype()) != 0, path,
               ": the checkpoint's optimizer state does not fit: \"", kOptimPrefix,
               nn::excerpt(key), "\" is ", dtype_name(tensor.dtype()),
               ", not the dtype of the model's parameters");
  }
  // A failure here ends the resume, so a model loaded before an optimizer mismatch is never
  // trained on. The optimizer's messages may quote the file's names: they are cut short.
  try {
    model.load_state_dict(model_state, /*strict=*/true);
  } catch (const Error& e) {
    throw Error(misfit + ": " + nn::excerpt(e.what(), 4 * nn::kMaxExcerpt));
  }
  try {
    optimizer.load_state_dict(optim_state);
  } catch (const Error& e) {
    throw Error(path + ": the checkpoint's optimizer state does not fit: " +
                nn::excerpt(e.what(), 4 * nn::kMaxExcerpt));
  }
  const Device device = model.device();
  if (ckpt.state.loss_sum.defined()) {
    ckpt.state.loss_sum = ckpt.state.loss_sum.to(device);
    ckpt.state.correct_sum = ckpt.state.correct_sum.to(device);
  }
  default_generator().set_state(ckpt.state.rng_seed, ckpt.state.rng_offset);
  return ckpt.state;
}

std::vector<std::map<std::string, double>> parse_epoch_metrics(const std::string& text,
                                                               const std::string& source) {
  const std::string where = source + ": malformed history";
  return epoch_metrics(nn::parse_untrusted_json(text, where), where);
}

}  // namespace loom::io
