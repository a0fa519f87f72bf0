// Checking the output paths of output_paths.h.
#include "output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <utility>

namespace loom::catdog {

namespace fs = std::filesystem;

namespace {

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const fs::path p(path);
  return (p.parent_path() / p.stem()).string() + suffix;
}

// Lexically, or through a link (both exist then).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;
  const fs::path x = fs::absolute(a, ec).lexically_normal();
  if (ec) return false;
  const fs::path y = fs::absolute(b, ec).lexically_normal();
  return !ec && x == y;
}

}  // namespace

TrainOutputs train_outputs(const TrainArgs& a) {
  TrainOutputs o;
  o.model = a.out;
  o.checkpoint = a.checkpoint.empty() ? a.out + ".ckpt" : a.checkpoint;
  o.metrics_csv = a.metrics.empty() ? with_suffix(a.out, ".metrics.csv") : a.metrics;
  o.metrics_jsonl = with_suffix(o.metrics_csv, ".jsonl");
  return o;
}

void check_output_path(const std::string& flag, const std::string& path) {
  LOOM_CHECK(!path.empty(), flag, ": the path is empty");
  std::error_code ec;
  // Not followed: the rename replaces a link itself, never what it points to.
  const fs::file_status target = fs::symlink_status(path, ec);
  LOOM_CHECK(!fs::is_directory(target), flag, " ", path, ": is a folder; give a file name");
  LOOM_CHECK(!fs::exists(target) || fs::is_regular_file(target) || fs::is_symlink(target), flag,
             " ", path, ": exists and is not a regular file (writing would replace it)");
  const fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  const fs::file_status folder = fs::status(dir, ec);
  LOOM_CHECK(fs::status_known(folder), flag, " ", path, ": cannot look up the folder ", dir, ": ",
             ec.message());
  LOOM_CHECK(fs::exists(folder), flag, " ", path, ": the folder ", dir, " does not exist");
  LOOM_CHECK(fs::is_directory(folder), flag, " ", path, ": ", dir, " is not a folder");
  // A name at least as long as the writer's temporary file's ("<path>.tmp-<pid>-<n>"), so that
  // a name near the file system's limit fails here too.
  const std::string probe =
      path + ".probe-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  LOOM_CHECK(fd >= 0, flag, " ", path, ": cannot create files in ", dir, ": ",
             std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

namespace {
// --tensorboard DIR: made when missing (as Keras' TensorBoard callback does), and it must take
// new files; an event file is a new name each run, so nothing there is ever replaced.
void prepare_tensorboard_folder(const std::string& dir) {
  LOOM_CHECK(!dir.empty(), "--tensorboard: the path is empty");
  std::error_code ec;
  fs::create_directories(dir, ec);
  LOOM_CHECK(!ec, "--tensorboard ", dir, ": cannot make the folder: ", ec.message());
  LOOM_CHECK(fs::is_directory(dir), "--tensorboard ", dir, ": is not a folder");
  check_output_path("--tensorboard", (fs::path(dir) / "events.out.tfevents.probe").string());
}
}  // namespace

void check_train_outputs(const TrainArgs& a) {
  LOOM_CHECK(!a.out.empty(), "--out: the path is empty");  // before the defaults made from it
  if (!a.tensorboard.empty()) prepare_tensorboard_folder(a.tensorboard);
  const TrainOutputs o = train_outputs(a);
  const std::pair<const char*, const std::string*> files[] = {
      {"--out", &o.model},
      {"--checkpoint", &o.checkpoint},
      {"--metrics", &o.metrics_csv},
      {"--metrics (JSON lines)", &o.metrics_jsonl}};
  for (size_t i = 0; i < std::size(files); ++i) {
    check_output_path(files[i].first, *files[i].second);
    for (size_t j = 0; j < i; ++j) {
      LOOM_CHECK(!same_file(*files[i].second, *files[j].second), files[i].first, " ",
                 *files[i].second, ": the same file as ", files[j].first,
                 " (one would overwrite the other)");
    }
  }
}

}  // namespace loom::catdog
