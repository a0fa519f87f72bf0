// ProgressBar: throttled redraws on a terminal, tenth-of-epoch lines elsewhere.
#include "loom/train/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <utility>

namespace loom::train {

namespace {
constexpr double kRedrawSeconds = 0.2;  // a terminal line at most this often: each draw syncs

// The stream whose last line is a bar redrawn in place, not yet ended by a newline (null: none).
// One owner for the terminal's line, whichever rank thread or callback prints.
std::mutex open_line_mutex;
const std::ostream* open_line = nullptr;

// Redraws the line in place ("\r", the line, erase to its end) and leaves it open.
void redraw(std::ostream& out, const std::string& line) {
  const std::lock_guard<std::mutex> lock(open_line_mutex);
  out << "\r" << line << "\033[K" << std::flush;
  open_line = &out;
}
}  // namespace

void print_line(std::ostream& out, const std::string& line) {
  const std::lock_guard<std::mutex> lock(open_line_mutex);
  if (open_line == &out) out << "\n";
  open_line = nullptr;
  out << line << "\n" << std::flush;
}

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600),
                  (long long)(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  }
  return buf;
}

bool is_terminal(const std::ostream* out) { return out == &std::cout && ::isatty(STDOUT_FILENO); }

int terminal_columns(const std::ostream* out) {
  if (is_terminal(out)) {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  }
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long columns = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && columns >= 20 && columns <= 1000)
      return static_cast<int>(columns);
  }
  return 80;
}

std::string fit_line(const std::vector<std::string>& candidates, int columns) {
  const size_t room = static_cast<size_t>(std::max(columns - 1, 1));  // the last column would wrap
  for (const std::string& line : candidates) {
    if (line.size() <= room) return line;
  }
  return candidates.empty() ? std::string() : candidates.back().substr(0, room);
}

namespace {

// "0.53ms/step", "12ms/step", "1.4s/step".
std::string per_step(double seconds) {
  char buf[32];
  const double ms = seconds * 1e3;
  if (ms >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1fs/step", seconds);
  } else {
    std::snprintf(buf, sizeof buf, ms < 10 ? "%.2fms/step" : "%.0fms/step", ms);
  }
  return buf;
}

// "850 img/s", "60.2k img/s", "1.3M img/s".
std::string images_per_second(double rate) {
  char buf[32];
  if (rate >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1fM img/s", rate / 1e6);
  } else if (rate >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.1fk img/s", rate / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f img/s", rate);
  }
  return buf;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

std::string metric(const char* name, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s %.4f", name, value);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(std::ostream* out, bool tty, int64_t epoch, int64_t epochs,
                         int64_t total_steps, int64_t first_step, bool lockstep, int columns)
    : out_(out),
      tty_(tty),
      columns_(columns > 0 ? columns : terminal_columns(out)),
      lockstep_(lockstep),
      epoch_(epoch),
      epochs_(epochs),
      total_(total_steps),
      first_step_(first_step),
      start_(Clock::now()),
      last_draw_(start_) {
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

void ProgressBar::draw(int64_t step, double loss, double accuracy, int64_t samples) {
  if (!tty_ || lockstep_) {
    while (next_plain_ <= 10 && step * 10 >= next_plain_ * total_) ++next_plain_;
  }
  if (out_ == nullptr) return;
  const auto now = Clock::now();
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t done = step - first_step_;
  const double eta = done > 0 ? elapsed / done * (total_ - step) : 0.0;
  const std::string speed = done > 0 ? per_step(elapsed / done) : "";
  const std::string rate = samples > 0 && elapsed > 0 ? images_per_second(samples / elapsed) : "";
  char counter[48];
  if (!tty_) {
    std::snprintf(counter, sizeof counter, "step %lld/%lld", (long long)step, (long long)total_);
    print_line(*out_, join({prefix() + " " + counter, "ETA " + format_duration(eta), speed, rate,
                            metric("loss", loss), metric("accuracy", accuracy)},
                           " - "));
    return;
  }
  std::snprintf(counter, sizeof counter, "%5lld/%lld", (long long)step, (long long)total_);
  const auto bar = [&](int width) {
    const int filled = static_cast<int>(width * step / total_);
    std::string b(filled, '=');
    if (filled < width) b += '>' + std::string(width - filled - 1, '.');
    return " [" + b + "]";
  };
  const std::string head = prefix() + " " + counter, time = "ETA " + format_duration(eta);
  const std::string l = metric("loss", loss), a = metric("accuracy", accuracy),
                    acc = metric("acc", accuracy);
  // From the fullest line to the barest; the first that fits the terminal is drawn.
  const std::vector<std::string> candidates = {
      join({head + bar(30), time, speed, rate, l, a}, " - "),
      join({head + bar(20), time, speed, rate, l, a}, " - "),
      join({head + bar(10), time, speed, rate, l, a}, " - "),
      join({head + bar(10), time, speed, rate, l, acc}, " - "),
      join({head + bar(10), time, speed, rate, l, acc}, " "),
      join({head + bar(10), time, speed, l, acc}, " "),
      join({head, time, speed, l, acc}, " "),
      join({head, time, l, acc}, " "),
      join({head, l, acc}, " "),
      join({std::to_string(step) + "/" + std::to_string(total_), l, acc}, " ")};
  redraw(*out_, fit_line(candidates, columns_));
}

void ProgressBar::validating(int64_t batch, int64_t batches) {
  if (out_ == nullptr || !tty_) return;
  const auto now = Clock::now();
  if (batch < batches && std::chrono::duration<double>(now - last_draw_).count() < kRedrawSeconds)
    return;
  last_draw_ = now;
  const std::string count = std::to_string(batch) + "/" + std::to_string(batches);
  redraw(*out_, fit_line({prefix() + " " + std::to_string(total_) + "/" + std::to_string(total_) +
                              " - validating " + count,
                          prefix() + " validating " + count, "validating " + count},
                         columns_));
}

void ProgressBar::finish(const EpochMetrics& metrics, double seconds, double train_seconds,
                         int64_t samples) {
  if (out_ == nullptr) return;
  const std::string head = prefix() + " " + std::to_string(total_) + "/" + std::to_string(total_);
  const int64_t steps = total_ - first_step_;  // a resumed epoch's bar times its own part
  const std::string speed = train_seconds > 0 && steps > 0 ? per_step(train_seconds / steps) : "";
  const std::string rate =
      train_seconds > 0 && samples > 0 ? images_per_second(samples / train_seconds) : "";
  std::vector<std::string> full{head, format_duration(seconds), speed, rate},
      shorter{head, format_duration(seconds), speed, rate};
  for (const auto& [name, abbreviation] : {std::pair<const char*, const char*>{"loss", "loss"},
                                           {"accuracy", "acc"},
                                           {"val_loss", "val_loss"},
                                           {"val_accuracy", "val_acc"}}) {
    const auto it = metrics.find(name);
    if (it == metrics.end()) continue;
    full.push_back(metric(name, it->second));
    shorter.push_back(metric(abbreviation, it->second));
  }
  for (const auto& [name, value] : metrics) {  // FitOptions::metrics: precision, val_auc, ...
    if (name == "loss" || name == "accuracy" || name == "val_loss" || name == "val_accuracy" ||
        name == "lr" || name == "seconds") {
      continue;
    }
    full.push_back(metric(name.c_str(), value));
    shorter.push_back(metric(name.c_str(), value));
  }
  if (!tty_) {
    print_line(*out_, join(full, " - "));
    return;
  }
  std::vector<std::string> bare(shorter.begin() + 4, shorter.end());
  bare.insert(bare.begin(), head);
  // The narrowest keeps the validation metrics first: they are what an epoch's line is read for.
  const std::string epoch = std::to_string(epoch_ + 1) + "/" + std::to_string(epochs_);
  std::vector<std::string> narrow{epoch};
  for (const auto& [name, abbreviation] :
       {std::pair<const char*, const char*>{"val_accuracy", "val_acc"}, {"accuracy", "acc"}}) {
    const auto it = metrics.find(name);
    if (it != metrics.end()) narrow.push_back(metric(abbreviation, it->second));
  }
  std::vector<std::string> timed(shorter);  // the ms/step and images/s go before the metrics do
  timed.erase(timed.begin() + 2, timed.begin() + 4);
  const std::lock_guard<std::mutex> lock(open_line_mutex);
  *out_ << "\r"
        << fit_line({join(full, " - "), join(shorter, " - "), join(shorter, " "), join(timed, " "),
                     join(bare, " "), join(narrow, " ")},
                    columns_)
        << "\033[K\n"
        << std::flush;
  if (open_line == out_) open_line = nullptr;
}

}  // namespace loom::train
