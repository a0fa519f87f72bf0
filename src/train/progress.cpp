// ProgressBar: throttled redraws on a terminal, tenth-of-epoch lines elsewhere.
#include "train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace loom::train {

namespace {
constexpr double kRedrawSeconds = 0.2;  // a terminal line at most this often: each draw syncs
}

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  }
  return buf;
}

bool is_terminal(const std::ostream* out) { return out == &std::cout && ::isatty(STDOUT_FILENO); }

ProgressBar::ProgressBar(std::ostream* out, bool tty, int64_t epoch, int64_t epochs,
                         int64_t total_steps, int64_t first_step, bool lockstep)
    : out_(out), tty_(tty), lockstep_(lockstep), epoch_(epoch), epochs_(epochs), total_(total_steps),
      first_step_(first_step), start_(Clock::now()), last_draw_(start_) {
  while (next_plain_ <= 10 && next_plain_ * total_ <= first_step_ * 10) ++next_plain_;
}

std::string ProgressBar::prefix() const {
  return "Epoch " + std::to_string(epoch_ + 1) + "/" + std::to_string(epochs_);
}

bool ProgressBar::due(int64_t step) const {
  if (total_ <= 0 || (out_ == nullptr && !lockstep_)) return false;
  if (tty_ && !lockstep_) {
    return step == total_ ||
           std::chrono::duration<double>(Clock::now() - last_draw_).count() >= kRedrawSeconds;
  }
  return next_plain_ <= 10 && step * 10 >= next_plain_ * total_ && step < total_;
}

void ProgressBar::draw(int64_t step, double loss, double accuracy) {
  if (!tty_ || lockstep_) {
    while (next_plain_ <= 10 && step * 10 >= next_plain_ * total_) ++next_plain_;
  }
  if (out_ == nullptr) return;
  const auto now = Clock::now();
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t done = step - first_step_;
  const double eta = done > 0 ? elapsed / done * (total_ - step) : 0.0;
  char line[160];
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * step / total_);
    std::string bar(filled, '=');
    if (filled < kWidth) bar += '>' + std::string(kWidth - filled - 1, '.');
    std::snprintf(line, sizeof line, "\r%s %5lld/%lld [%s] ETA %s - loss %.4f - accuracy %.4f",
                  prefix().c_str(), (long long)step, (long long)total_, bar.c_str(),
                  format_duration(eta).c_str(), loss, accuracy);
    *out_ << line << std::flush;
  } else {
    std::snprintf(line, sizeof line, "%s step %lld/%lld - ETA %s - loss %.4f - accuracy %.4f",
                  prefix().c_str(), (long long)step, (long long)total_, format_duration(eta).c_str(),
                  loss, accuracy);
    *out_ << line << "\n" << std::flush;
  }
}

void ProgressBar::finish(const EpochMetrics& metrics, double seconds) {
  if (out_ == nullptr) return;
  std::string line = prefix() + " " + std::to_string(total_) + "/" + std::to_string(total_) + " - " +
                     format_duration(seconds);
  for (const char* name : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    const auto it = metrics.find(name);
    if (it == metrics.end()) continue;
    char value[64];
    std::snprintf(value, sizeof value, " - %s %.4f", name, it->second);
    line += value;
  }
  if (tty_) *out_ << "\r\033[K";
  *out_ << line << "\n" << std::flush;
}

}  // namespace loom::train
