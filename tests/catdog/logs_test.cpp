// What loom-catdog train prints and logs, run as a person runs it: piped, every progress line and
// the epoch line carry ms/step and images/s and the header states precision and step mode; the
// CSV, the JSON lines and the model file count epochs from 1 (and a resume still works); under a
// pseudo-terminal (a terminal, or what mpirun and srun give ranks) and under mpirun itself every
// --print-losses line starts a line of its own, never glued to the in-place bar; bf16 on the CPU
// is refused; a mistyped flag gets "did you mean".
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app_runner.h"
#include "catdog/flag_hints.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class CatdogLogs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ =
        (fs::temp_directory_path() / ("loom_catdog_logs_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 6, 3, 17);  // 12 training images: 3 batches of 4
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::vector<std::string> args(const std::string& name, int epochs,
                                       const std::vector<std::string>& more = {}) {
    return testing::small_train_args(root_ + "/data", epochs, root_ + "/" + name + ".st", more);
  }
  static std::string root_;
};
std::string CatdogLogs::root_;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every "step <n> loss" line of `output` starts a line (follows a '\n'): none is glued to a bar.
// Returns how many there were.
int expect_loss_lines_start_lines(const std::string& output) {
  int count = 0;
  for (size_t at = output.find("step "); at != std::string::npos;
       at = output.find("step ", at + 1)) {
    size_t end = at + 5;
    while (end < output.size() && std::isdigit(static_cast<unsigned char>(output[end]))) ++end;
    if (end == at + 5 || output.compare(end, 6, " loss ") != 0) continue;  // "step 1/3 - ETA"
    ++count;
    EXPECT_TRUE(at > 0 && output[at - 1] == '\n')
        << "glued: ..." << output.substr(at >= 60 ? at - 60 : 0, 90);
  }
  return count;
}

// A column of the metrics CSV by epoch (epochs from 1).
std::map<int, double> csv_column(const std::string& csv_path, const std::string& column) {
  std::istringstream csv(testing::read_text(csv_path));
  std::string header;
  std::getline(csv, header);
  std::vector<std::string> names;
  std::istringstream h(header);
  for (std::string n; std::getline(h, n, ',');) names.push_back(n);
  const size_t index = std::find(names.begin(), names.end(), column) - names.begin();
  EXPECT_LT(index, names.size()) << header;
  std::map<int, double> values;
  for (std::string row; std::getline(csv, row);) {
    std::vector<std::string> cells;
    std::istringstream r(row);
    for (std::string c; std::getline(r, c, ',');) cells.push_back(c);
    if (index < cells.size()) values[std::stoi(cells[0])] = std::stod(cells[index]);
  }
  return values;
}

TEST_F(CatdogLogs, PipedRunCarriesTheNumbersAndCountsEpochsFromOne) {
  const auto [status, text] =
      testing::run_to_end(args("piped", 2, {"--print-losses"}), root_ + "/piped");
  ASSERT_EQ(status, 0) << text;
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_FALSE(lines.empty());
  // The header: precision and step mode, and it comes before decoding is reported.
  EXPECT_NE(lines[0].find(", precision fp32, steps eager"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("(decoded in"), std::string::npos) << lines[1];
  int progress = 0, epochs = 0;
  for (const std::string& line : lines) {
    if (line.rfind("Epoch ", 0) != 0) continue;
    (line.find(" step ") != std::string::npos ? progress : epochs)++;
    EXPECT_NE(line.find("ms/step - "), std::string::npos) << line;
    EXPECT_NE(line.find(" img/s - loss "), std::string::npos) << line;
  }
  EXPECT_GE(progress, 2);
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(testing::step_losses(text).size(), 6u);
  EXPECT_EQ(expect_loss_lines_start_lines(text), 6);

  // Epochs from 1 in the CSV, the JSON lines and the model file; the final line's "best epoch N"
  // is the file's.
  const std::map<int, double> accuracy = csv_column(root_ + "/piped.metrics.csv", "val_accuracy");
  EXPECT_EQ(accuracy.size(), 2u);
  EXPECT_EQ(accuracy.begin()->first, 1);
  std::istringstream jsonl(testing::read_text(root_ + "/piped.metrics.jsonl"));
  int expected_epoch = 1;
  for (std::string line; std::getline(jsonl, line); ++expected_epoch)
    EXPECT_EQ(nlohmann::json::parse(line).at("epoch").get<int>(), expected_epoch) << line;
  EXPECT_EQ(expected_epoch, 3);
  const io::Metadata meta = io::load_model(root_ + "/piped.st").metadata;
  EXPECT_EQ(meta.at("loom.saved_epoch_base"), "1");
  const std::string saved = meta.at("loom.saved_epoch");
  EXPECT_NE(text.find("(best epoch " + saved + " of 2,"), std::string::npos) << text;
  EXPECT_NE(text.find("--saved-epoch " + saved + ")"), std::string::npos) << text;
  EXPECT_EQ(train::saved_epoch(meta, "piped.st")->epoch + 1, std::stoi(saved));

  // The resume path reads the 1-based file back: a third epoch continues the run.
  const auto [resumed, resumed_text] = testing::run_to_end(
      args("piped", 3, {"--resume", root_ + "/piped.st.ckpt"}), root_ + "/piped_resumed");
  ASSERT_EQ(resumed, 0) << resumed_text;
  const std::map<int, double> after = csv_column(root_ + "/piped.metrics.csv", "val_accuracy");
  EXPECT_EQ(after.size(), 3u);
  EXPECT_EQ(after.at(1), accuracy.at(1));
  EXPECT_EQ(after.rbegin()->first, 3);
}

// Runs `argv` with standard output on a pseudo-terminal of 80 columns (standard error to a
// file), to its end; returns the exit status and what reached the terminal.
std::pair<int, std::string> run_on_a_terminal(const std::vector<std::string>& argv,
                                              const std::string& err_path) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  EXPECT_GE(master, 0);
  EXPECT_EQ(grantpt(master), 0);
  EXPECT_EQ(unlockpt(master), 0);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  EXPECT_GE(slave, 0);
  winsize size{};
  size.ws_row = 24;
  size.ws_col = 80;
  ioctl(slave, TIOCSWINSZ, &size);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(slave, STDOUT_FILENO);
    if (!freopen(err_path.c_str(), "w", stderr)) _exit(127);
    close(master);
    close(slave);
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  close(slave);
  std::string output;
  char buffer[4096];
  for (ssize_t n; (n = read(master, buffer, sizeof buffer)) > 0;)  // EIO once the child is gone
    output.append(buffer, static_cast<size_t>(n));
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

// A terminal, one rank and two thread ranks (whose bar is drawn at each tenth, as ranks under
// mpirun and srun draw it on the pseudo-terminal the launcher gives them): each loss line
// starts a line of its own, after a bar left open at the step before it.
TEST_F(CatdogLogs, LossLinesEndTheBarLineUnderAPseudoTerminal) {
  for (const char* ranks : {"1", "2"}) {
    SCOPED_TRACE(ranks);
    std::vector<std::string> argv =
        args(std::string("tty") + ranks, 2, {"--print-losses", "--world-size", ranks});
    argv.insert(argv.begin(), testing::catdog_binary());
    const auto [status, output] = run_on_a_terminal(argv, root_ + "/tty.err");
    ASSERT_EQ(status, 0) << output << testing::read_text(root_ + "/tty.err");
    // One rank: 3 steps an epoch; two: each rank's 6 images in batches of 4, 2 steps.
    EXPECT_EQ(expect_loss_lines_start_lines(output), std::string(ranks) == "1" ? 6 : 4);
    // The case that mattered: a bar drawn in place (erased to the line's end) right before a
    // loss line, ended by the terminal's line end (the terminal turns \n into \r\n).
    EXPECT_NE(output.find("\033[K\r\nstep "), std::string::npos) << output;
  }
}

// Under mpirun (Open MPI gives its ranks a pseudo-terminal and relays it), the same.
TEST_F(CatdogLogs, LossLinesEndTheBarLineUnderMpirun) {
  if (!dist::backend_available(dist::Backend::Mpi)) GTEST_SKIP() << "built without MPI";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  const std::string out = root_ + "/mpi.out";
  std::string command =
      "mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl "
      "self,vader -np 2 " +
      testing::catdog_binary();
  for (const std::string& a : args("mpi", 1, {"--print-losses", "--backend", "mpi"}))
    command += " '" + a + "'";
  // Open MPI leaks at exit by design (tests/distributed/mpi.cmake): under AddressSanitizer the
  // ranks check memory errors, not leaks.
  const int status =
      std::system(("ASAN_OPTIONS=detect_leaks=0 " + command + " > " + out + " 2>&1").c_str());
  const std::string output = testing::read_text(out);
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(expect_loss_lines_start_lines(output), 2) << output;         // 6 images a rank, batch 4
  EXPECT_NE(output.find("\033[K\nstep "), std::string::npos) << output;  // after a bar
  EXPECT_NE(output.find("world size 2 (launched, mpi)"), std::string::npos) << output;
}

// An installed loom-catdog (PREFIX/bin) names the plotting script installed beside it
// (PREFIX/share/loom), not the source tree it was built from.
TEST_F(CatdogLogs, AnInstalledBinarysChartHintNamesItsOwnScript) {
  const std::string prefix = root_ + "/prefix";
  fs::create_directories(prefix + "/bin");
  fs::create_directories(prefix + "/share/loom");
  fs::copy_file(testing::catdog_binary(), prefix + "/bin/loom-catdog");
  std::ofstream(prefix + "/share/loom/plot_metrics.py") << "# stands in for the installed one\n";
  const std::string out = root_ + "/installed.out";
  std::string command = prefix + "/bin/loom-catdog";
  for (const std::string& a : args("installed", 1)) command += " '" + a + "'";
  ASSERT_EQ(std::system((command + " > " + out + " 2>&1").c_str()), 0) << testing::read_text(out);
  const std::string text = testing::read_text(out);
  EXPECT_NE(text.find("(chart: python3 " + prefix + "/share/loom/plot_metrics.py " + root_ +
                      "/installed.metrics.csv --saved-epoch 1)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("tools/plot_metrics.py"), std::string::npos) << text;
}

TEST_F(CatdogLogs, Bf16IsRefusedOnTheCpu) {
  testing::expect_prompt_error(args("bf16", 1, {"--precision", "bf16"}), root_ + "/bf16",
                               {"--precision bf16", "CUDA only", "--precision fp32"});
}

TEST_F(CatdogLogs, AMistypedFlagGetsASuggestion) {
  const auto [status, text] = testing::run_to_end({"train", "--epoch", "3"}, root_ + "/typo");
  EXPECT_EQ(status, 109) << text;  // CLI11's status for arguments it did not expect
  EXPECT_NE(text.find("loom-catdog train: unknown flag --epoch; did you mean --epochs?"),
            std::string::npos)
      << text;
  const auto [status2, text2] =
      testing::run_to_end({"predict", "--modle", "m.st", "a.png"}, root_ + "/typo2");
  EXPECT_NE(status2, 0);
  EXPECT_NE(text2.find("did you mean --model?"), std::string::npos) << text2;
}

TEST_F(CatdogLogs, HelpListsEverySubcommandWithExamples) {
  const auto [status, text] = testing::run_to_end({"--help"}, root_ + "/help");
  EXPECT_EQ(status, 0) << text;
  for (const char* s : {"import", "Examples:", "loom-catdog import --model seed_cnn",
                        "loom-catdog train --data DIR"})
    EXPECT_NE(text.find(s), std::string::npos) << s << " in " << text;
  const auto [train_status, train_text] = testing::run_to_end({"train", "--help"}, root_ + "/help");
  EXPECT_EQ(train_status, 0);
  EXPECT_NE(train_text.find("seeds the weights, the shuffling"), std::string::npos) << train_text;
}

TEST(FlagHints, NearestKnownFlagByEditDistance) {
  EXPECT_EQ(catdog::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(catdog::edit_distance("", "abc"), 3u);
  EXPECT_EQ(catdog::edit_distance("modle", "model"), 1u);  // a swap of neighbours
  const std::vector<std::string> known = {"--epochs", "--lr", "--lr-schedule", "--tensorboard",
                                          "--seed"};
  EXPECT_EQ(catdog::nearest_flag("--epoch", known), "--epochs");
  EXPECT_EQ(catdog::nearest_flag("--epoch=3", known), "--epochs");
  EXPECT_EQ(catdog::nearest_flag("--lr-shedule", known), "--lr-schedule");
  EXPECT_EQ(catdog::nearest_flag("--tensor", known), "--tensorboard");  // the start of one
  EXPECT_EQ(catdog::nearest_flag("--zzzzzzzz", known), "");
  EXPECT_EQ(catdog::flag_hints({"--epochs", "3", "--sed", "1", "--", "--x"}, known),
            std::vector<std::string>{"unknown flag --sed; did you mean --seed?"});
}

}  // namespace
}  // namespace loom
