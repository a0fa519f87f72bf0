// The per-epoch progress display of fit(): on a terminal one line redrawn with '\r' (step k/N,
// ETA, running loss and accuracy); into a file or pipe, plain lines at every tenth of the epoch.
// The caller asks due() first and reads its device sums only when a line will be drawn. In
// lockstep (ranks of one job) lines are due at the tenths on a terminal too, and even where
// nothing is drawn (out null on ranks other than 0), so that all ranks sum metrics together.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "train/history.h"

namespace loom::train {

class ProgressBar {
 public:
  // out may be null (silent). tty: redraw in place instead of printing lines.
  ProgressBar(std::ostream* out, bool tty, int64_t epoch, int64_t epochs, int64_t total_steps,
              int64_t first_step = 0, bool lockstep = false);

  bool due(int64_t step) const;
  void draw(int64_t step, double loss, double accuracy);
  // The epoch's closing line with its metrics and duration.
  void finish(const EpochMetrics& metrics, double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  std::string prefix() const;

  std::ostream* out_;
  bool tty_;
  bool lockstep_;
  int64_t epoch_, epochs_, total_, first_step_;
  Clock::time_point start_, last_draw_;
  int64_t next_plain_ = 1;  // the next tenth at which a plain line is due
};

// "1m05s", "42s", "3h02m".
std::string format_duration(double seconds);
// True when `out` is std::cout and standard output is a terminal.
bool is_terminal(const std::ostream* out);

}  // namespace loom::train
