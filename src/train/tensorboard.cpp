// TensorBoardLogger: when each scalar is written, and the images/s clock.
#include "loom/train/tensorboard.h"

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

void TensorBoardLogger::on_train_begin(TrainContext& ctx) {
  if (ctx.rank != 0) return;
  writer_ = std::make_unique<EventFileWriter>(options_.dir);
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
  const double now = wall_time_now();
  for (const auto& [name, value] : metrics) writer_->add_scalar(name, value, ctx.epoch, now);
  const double seconds = std::chrono::duration<double>(last_batch_end_ - epoch_start_).count();
  const int64_t samples = (ctx.samples_seen - samples_at_epoch_start_) * ctx.world_size;
  if (samples > 0 && seconds > 0)
    writer_->add_scalar("images_per_second", samples / seconds, ctx.epoch, now);
  writer_->flush();
}

void TensorBoardLogger::on_train_end(TrainContext& ctx) {
  if (ctx.rank != 0 || !writer_) return;
  writer_->flush();
  writer_.reset();  // a later fit() opens a file of its own
}

}  // namespace loom::train
