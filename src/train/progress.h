// The per-epoch progress display of fit(): on a terminal one line redrawn with '\r' (step k/N, a
// bar, ETA, ms/step, images/s, running loss and accuracy), fitted to the terminal's width (fields
// shorten, then go, so that it never wraps); into a file or pipe, plain lines at every tenth of
// the epoch with the same numbers. Any other line printed during training goes through
// print_line, which ends a bar line left open first. The caller asks due() first and reads its
// device sums only when a line will be drawn. In lockstep (ranks of one job) lines are due at the
// tenths on a terminal too, and even where nothing is drawn (out null on ranks other than 0), so
// that all ranks sum metrics together.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "loom/train/history.h"

namespace loom::train {

class ProgressBar {
 public:
  // out may be null (silent). tty: redraw in place instead of printing lines, at most `columns`
  // wide (0: terminal_columns(out)).
  ProgressBar(std::ostream* out, bool tty, int64_t epoch, int64_t epochs, int64_t total_steps,
              int64_t first_step = 0, bool lockstep = false, int columns = 0);

  bool due(int64_t step) const;
  // `samples`: those seen this epoch, for images/s (negative: not shown).
  void draw(int64_t step, double loss, double accuracy, int64_t samples = -1);
  // On a terminal: "validating k/N" in place of the bar while the validation data is evaluated
  // (redrawn no more often than the bar); nothing into a file or pipe.
  void validating(int64_t batch, int64_t batches);
  // The epoch's closing line with its metrics (loss, accuracy, their validation values, then any
  // other metric but the learning rate) and duration; with `train_seconds` > 0 (the epoch's
  // training steps, validation left out) also ms/step over this bar's steps and, with `samples`
  // > 0 (those trained on over all ranks), images/s.
  void finish(const EpochMetrics& metrics, double seconds, double train_seconds = 0.0,
              int64_t samples = -1);

 private:
  using Clock = std::chrono::steady_clock;
  std::string prefix() const;

  std::ostream* out_;
  bool tty_;
  int columns_;
  bool lockstep_;
  int64_t epoch_, epochs_, total_, first_step_;
  Clock::time_point start_, last_draw_;
  int64_t next_plain_ = 1;  // the next tenth at which a plain line is due
};

// Writes `line` and a newline to `out` and flushes, first ending the line of a progress bar
// redrawn in place on `out` when one is open: a log line printed while a bar is drawn (a
// callback's, such as loom-catdog's --print-losses) never lands at the end of the bar's line,
// under a terminal or a launcher's pseudo-terminal (mpirun, srun). Thread-safe.
void print_line(std::ostream& out, const std::string& line);

// "1m05s", "42s", "3h02m".
std::string format_duration(double seconds);
// True when `out` is std::cout and standard output is a terminal.
bool is_terminal(const std::ostream* out);
// The width a redrawn line may take: the terminal's (TIOCGWINSZ) when `out` is std::cout on a
// terminal, else $COLUMNS when it is a number from 20 to 1000, else 80.
int terminal_columns(const std::ostream* out);
// The longest of `candidates` (tried in order) that is at most `columns - 1` characters, else
// the last one cut to fit: the line a terminal of that width shows without wrapping.
std::string fit_line(const std::vector<std::string>& candidates, int columns);

}  // namespace loom::train
