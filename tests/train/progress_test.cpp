// The progress bar fits the terminal: every redrawn line of 80 and 120 columns is narrower than
// the terminal (so it never wraps), the wide one shows ms/step and images/s, and under a real
// pseudo-terminal the width comes from the terminal itself. Off a terminal every line and the
// epoch's line carry ms/step and images/s too, and a log line printed while a bar is drawn in
// place (print_line) starts a line of its own.
#include <fcntl.h>
#include <loom/loom.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "testing.h"

namespace loom {
namespace {

// The pieces of terminal output between carriage returns and newlines, without the
// erase-to-end-of-line sequence: what each redraw leaves on the screen.
std::vector<std::string> screen_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::string current;
  for (size_t i = 0; i < output.size(); ++i) {
    if (output.compare(i, 3, "\033[K") == 0) {
      i += 2;
      continue;
    }
    const char c = output[i];
    if (c == '\r' || c == '\n') {
      if (!current.empty()) lines.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) lines.push_back(current);
  return lines;
}

// One epoch of `steps` redraws and its closing line, as fit draws them.
void draw_epoch(std::ostream& out, bool tty, int columns, int64_t steps) {
  train::ProgressBar bar(&out, tty, 11, 25, steps, 0, false, columns);
  for (int64_t s = 1; s <= steps; ++s)
    bar.draw(s, 0.6931 - 0.001 * static_cast<double>(s), 0.5 + 0.002 * s, 32 * s);
  bar.finish(
      {{"loss", 0.4679}, {"accuracy", 0.7738}, {"val_loss", 0.5131}, {"val_accuracy", 0.7525}},
      1.5);
}

TEST(Progress, RedrawsFitTheTerminalWithoutWrapping) {
  for (int columns : {80, 120, 40}) {
    SCOPED_TRACE(columns);
    std::ostringstream out;
    draw_epoch(out, true, columns, 188);
    const std::vector<std::string> lines = screen_lines(out.str());
    ASSERT_EQ(lines.size(), 189u);
    for (const std::string& line : lines)
      EXPECT_LE(line.size(), static_cast<size_t>(columns - 1)) << line;
    // At 40 columns the epoch number goes before the metrics do.
    if (columns >= 80)
      EXPECT_NE(lines.front().find("Epoch 12/25"), std::string::npos) << lines.front();
    EXPECT_NE(lines[187].find("188/188"), std::string::npos) << lines[187];
    EXPECT_NE(lines.back().find("0.7525"), std::string::npos) << lines.back();
    if (columns == 120) {
      EXPECT_NE(lines[100].find("ms/step"), std::string::npos) << lines[100];
      EXPECT_NE(lines[100].find("img/s"), std::string::npos) << lines[100];
      EXPECT_NE(lines[100].find("accuracy"), std::string::npos) << lines[100];
    }
    if (columns == 80) EXPECT_NE(lines[100].find("loss 0.5921"), std::string::npos) << lines[100];
  }
}

TEST(Progress, PlainLinesStayWholeOffATerminal) {
  std::ostringstream out;
  draw_epoch(out, false, 40, 20);
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  EXPECT_NE(out.str().find("Epoch 12/25 step 10/20 - ETA"), std::string::npos) << out.str();
  EXPECT_NE(
      out.str().find("Epoch 12/25 20/20 - 2s - loss 0.4679 - accuracy 0.7738 - val_loss 0.5131 - "
                     "val_accuracy 0.7525"),
      std::string::npos)
      << out.str();
}

// What a piped log is read for: each tenth's line and the epoch's line with ms/step and img/s.
TEST(Progress, PlainLinesAndTheEpochLineCarryTheSpeed) {
  std::ostringstream out;
  train::ProgressBar bar(&out, false, 0, 3, 10, 0, false, 80);
  for (int64_t s = 1; s <= 10; ++s) {
    if (bar.due(s)) bar.draw(s, 0.5, 0.75, 32 * s);  // as fit asks
  }
  // 10 steps of 32 images trained in 2 s: 200 ms/step, 160 img/s.
  bar.finish({{"loss", 0.5}, {"accuracy", 0.75}, {"val_accuracy", 0.7}}, 2.4, 2.0, 320);
  std::istringstream lines(out.str());
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  ASSERT_EQ(all.size(), 10u) << out.str();  // the tenths 1..9, then the epoch's line
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    EXPECT_NE(all[i].find("ms/step - "), std::string::npos) << all[i];
    EXPECT_NE(all[i].find(" img/s - loss 0.5000"), std::string::npos) << all[i];
  }
  EXPECT_EQ(all.back(),
            "Epoch 1/3 10/10 - 2s - 200ms/step - 160 img/s - loss 0.5000 - accuracy 0.7500 - "
            "val_accuracy 0.7000");
}

// The terminal's line has one owner: a line printed while a bar is drawn in place ends the bar's
// line first, and one printed after the epoch's line (which ends its own) adds no empty line.
TEST(Progress, PrintLineEndsTheBarLineItInterrupts) {
  std::ostringstream out;
  train::ProgressBar bar(&out, true, 0, 1, 4, 0, false, 80);
  bar.draw(4, 0.5, 0.75, 128);  // the last step always draws
  train::print_line(out, "step 4 loss 0x1p-1");
  train::print_line(out, "step 5 loss 0x1p-2");
  bar.validating(1, 1);
  train::print_line(out, "a note");
  bar.finish({{"loss", 0.5}}, 1.0, 0.5, 128);
  train::print_line(out, "after");
  const std::string text = out.str();
  EXPECT_NE(text.find("\033[K\nstep 4 loss 0x1p-1\nstep 5 loss 0x1p-2\n\r"), std::string::npos)
      << text;
  EXPECT_NE(text.find("validating 1/1\033[K\na note\n\r"), std::string::npos) << text;
  EXPECT_NE(text.find("\033[K\nafter\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n\n"), std::string::npos) << text;
  // Another stream's open bar is not this one's: nothing is ended there.
  std::ostringstream other;
  train::ProgressBar open_bar(&out, true, 0, 1, 4, 0, false, 80);
  open_bar.draw(4, 0.5, 0.75, 128);
  train::print_line(other, "elsewhere");
  EXPECT_EQ(other.str(), "elsewhere\n");
  open_bar.finish({{"loss", 0.5}}, 1.0);  // closes the line before `out` goes
}

TEST(Progress, ValidationShowsOnATerminalAndOtherMetricsCloseTheEpoch) {
  for (bool tty : {true, false}) {
    std::ostringstream out;
    train::ProgressBar bar(&out, tty, 2, 5, 10, 0, false, 80);
    bar.validating(1, 4);  // at once: the bar was drawn at its start only
    bar.validating(4, 4);  // the last batch always draws
    bar.finish({{"loss", 0.5}, {"val_loss", 0.6}, {"val_f1", 0.75}, {"lr", 1e-3}}, 3.0);
    const std::string text = out.str();
    EXPECT_EQ(text.find("validating 4/4") != std::string::npos, tty) << text;
    EXPECT_NE(text.find("val_f1 0.7500"), std::string::npos) << text;
    EXPECT_EQ(text.find("lr"), std::string::npos) << text;
    for (const std::string& line : screen_lines(text)) EXPECT_LE(line.size(), 79u) << line;
  }
}

TEST(Progress, FitLineTakesTheFirstCandidateThatFits) {
  EXPECT_EQ(train::fit_line({"a long line", "short", "x"}, 8), "short");
  EXPECT_EQ(train::fit_line({"a long line"}, 5), "a lo");
}

TEST(Progress, ColumnsComeFromTheEnvironmentOffATerminal) {
  std::ostringstream out;
  const char* saved = std::getenv("COLUMNS");
  const std::string previous = saved ? saved : "";
  setenv("COLUMNS", "132", 1);
  EXPECT_EQ(train::terminal_columns(&out), 132);
  setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(train::terminal_columns(&out), 80);
  setenv("COLUMNS", "5", 1);
  EXPECT_EQ(train::terminal_columns(&out), 80);
  if (saved) {
    setenv("COLUMNS", previous.c_str(), 1);
  } else {
    unsetenv("COLUMNS");
  }
}

// Standard output on a pseudo-terminal of 80 columns: is_terminal sees it, the width is read
// from the terminal (TIOCGWINSZ), and what reaches the terminal never wraps.
TEST(Progress, UnderAPseudoTerminalTheWidthIsTheTerminals) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  winsize size{};
  size.ws_row = 24;
  size.ws_col = 80;
  ASSERT_EQ(ioctl(slave, TIOCSWINSZ, &size), 0);
  std::cout.flush();
  const int saved_stdout = dup(STDOUT_FILENO);
  ASSERT_GE(saved_stdout, 0);
  ASSERT_EQ(dup2(slave, STDOUT_FILENO), STDOUT_FILENO);
  const bool tty = train::is_terminal(&std::cout);
  const int columns = train::terminal_columns(&std::cout);
  draw_epoch(std::cout, tty, 0, 12);  // 0: the bar asks the terminal
  std::cout.flush();
  dup2(saved_stdout, STDOUT_FILENO);
  close(saved_stdout);
  close(slave);
  fcntl(master, F_SETFL, O_NONBLOCK);
  std::string output;
  char buffer[4096];
  for (ssize_t n; (n = read(master, buffer, sizeof buffer)) > 0;)
    output.append(buffer, static_cast<size_t>(n));
  close(master);
  EXPECT_TRUE(tty);
  EXPECT_EQ(columns, 80);
  const std::vector<std::string> lines = screen_lines(output);
  ASSERT_EQ(lines.size(), 13u) << output;
  for (const std::string& line : lines) EXPECT_LE(line.size(), 79u) << line;
  EXPECT_NE(lines[5].find("6/12"), std::string::npos) << lines[5];
}

}  // namespace
}  // namespace loom
