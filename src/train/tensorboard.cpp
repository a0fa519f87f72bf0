// TensorBoardLogger: when each scalar is written, and the images/s clock.
#include "loom/train/tensorboard.h"

#include <filesystem>
#include <sstream>

#include "loom/nn/sequential.h"

namespace loom::train {

TensorBoardLogger::TensorBoardLogger(TensorBoardOptions options) : options_(std::move(options)) {
  LOOM_CHECK(!options_.dir.empty(), "TensorBoardLogger: the log folder is empty");
  LOOM_CHECK(options_.batch_every >= 0, "TensorBoardLogger: batch_every must be >= 0, got ",
             options_.batch_every);
}

namespace {
TensorBoardOptions in_folder(std::string dir) {
  TensorBoardOptions options;
  options.dir = std::move(dir);
  return options;
}
}  // namespace

TensorBoardLogger::TensorBoardLogger(std::string dir)
    : TensorBoardLogger(in_folder(std::move(dir))) {}

std::string TensorBoardLogger::summary_text(TrainContext& ctx) const {
  std::string text = options_.model_summary;
  nn::Module& model = ctx.saved_model();
  auto* sequential = dynamic_cast<nn::Sequential*>(&model);
  if (text.empty() && sequential != nullptr && !options_.input_shape.empty()) {
    text = sequential->summary(options_.input_shape);
  } else if (text.empty()) {
    std::ostringstream out;
    out << model.type_name() << ": " << model.num_parameters() << " parameters ("
        << model.num_parameters(true) << " trainable)\n";
    for (const auto& [name, t] : model.named_parameters())
      out << name << " " << shape_str(t.shape()) << "\n";
    text = out.str();
  }
  std::string block;  // Markdown: a line indented by four spaces is code, shown fixed-width
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) block += "    " + line + "\n";
  return block;
}

namespace {

// <dir>/<run>, made when missing, after checking `dir` as EventFileWriter would (its message).
std::string run_folder(const std::string& dir, const std::string& run) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  LOOM_CHECK(fs::exists(status), "TensorBoard: the log folder ", dir, " does not exist");
  LOOM_CHECK(fs::is_directory(status), "TensorBoard: the log folder ", dir, " is not a folder");
  const std::string folder = (fs::path(dir) / run).string();
  fs::create_directory(folder, ec);
  LOOM_CHECK(!ec, "TensorBoard: cannot make the run folder ", folder, ": ", ec.message());
  return folder;
}

}  // namespace

std::pair<std::string, std::string> TensorBoardLogger::run_and_tag(const std::string& metric) {
  const bool validation = metric.rfind("val_", 0) == 0;
  std::string name = validation ? metric.substr(4) : metric;
  if (name == "lr") name = "learning_rate";  // Keras' name
  return {validation ? "validation" : "train", "epoch_" + name};
}

void TensorBoardLogger::on_train_begin(TrainContext& ctx) {
  if (ctx.rank != 0) return;
  validation_writer_.reset();
  validation_path_.clear();
  writer_ = std::make_unique<EventFileWriter>(run_folder(options_.dir, "train"));
  path_ = writer_->path();
  writer_->add_text("model_summary", summary_text(ctx), 0, wall_time_now());
  writer_->flush();
}

void TensorBoardLogger::on_epoch_begin(TrainContext& ctx) {
  epoch_start_ = last_batch_end_ = Clock::now();
  samples_at_epoch_start_ = ctx.samples_seen;  // a run resumed mid-epoch has trained on some
}

void TensorBoardLogger::on_batch_end(TrainContext& ctx) {
  if (ctx.rank != 0) return;
  const bool log_batch = options_.batch_every > 0 && ctx.global_step % options_.batch_every == 0;
  // The epoch's last step waits for the device, so that the clock covers the work queued.
  const bool last_step = ctx.step_in_epoch == ctx.steps_per_epoch;
  double batch_loss = 0.0;
  if ((log_batch || last_step) && ctx.batch_loss.defined())
    batch_loss = ctx.batch_loss.item<double>();
  last_batch_end_ = Clock::now();
  if (log_batch) writer_->add_scalar("batch_loss", batch_loss, ctx.global_step, wall_time_now());
}

void TensorBoardLogger::on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) {
  if (ctx.rank != 0) return;
  for (const auto& [name, value] : metrics) {
    if (run_and_tag(name).first != "validation" || validation_writer_) continue;
    // Opened before the clock below is read: its first record's time precedes the scalars'.
    validation_writer_ = std::make_unique<EventFileWriter>(run_folder(options_.dir, "validation"));
    validation_path_ = validation_writer_->path();
  }
  const double now = wall_time_now();
  const int64_t step = ctx.epoch + 1;  // epochs counted from 1, as people read them
  for (const auto& [name, value] : metrics) {
    const auto [run, tag] = run_and_tag(name);
    (run == "validation" ? *validation_writer_ : *writer_).add_scalar(tag, value, step, now);
  }
  const double seconds = std::chrono::duration<double>(last_batch_end_ - epoch_start_).count();
  const int64_t samples = (ctx.samples_seen - samples_at_epoch_start_) * ctx.world_size;
  if (samples > 0 && seconds > 0)
    writer_->add_scalar("epoch_images_per_second", samples / seconds, step, now);
  writer_->flush();
  if (validation_writer_) validation_writer_->flush();
}

void TensorBoardLogger::on_train_end(TrainContext& ctx) {
  if (ctx.rank != 0 || !writer_) return;
  writer_->flush();
  writer_.reset();  // a later fit() opens files of its own
  if (validation_writer_) validation_writer_->flush();
  validation_writer_.reset();
}

}  // namespace loom::train
