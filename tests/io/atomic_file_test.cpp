// io::read_file against files that are not regular files or are far too large (each an error
// naming the path within 2 s and 512 MB), and write_file_atomically's housekeeping: the stale
// temporaries of killed writers are swept, and a second writer of the same target is refused
// with an error naming the first, leaving the file intact.
#include "loom/io/atomic_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "data/bounded_child.h"
#include "folder_test.h"
#include "loom/io/safetensors.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public testing::FolderTest {
 protected:
  AtomicFile() : FolderTest("loom_af_") {}
  static void write_text(const std::string& target, const std::string& text) {
    io::write_file_atomically(target,
                              [&](const io::ByteSink& sink) { sink(text.data(), text.size()); });
  }
};

// The id of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) _exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// ---- reading ------------------------------------------------------------------------------

TEST_F(AtomicFile, ReadFileRefusesWhatIsNotARegularFileNamingIt) {
  ASSERT_EQ(::mkfifo(path("model.safetensors").c_str(), 0644), 0);
  EXPECT_BOUNDED_ERROR(io::read_file(path("model.safetensors")),
                       "model.safetensors: not a regular file (a named pipe)");
  EXPECT_BOUNDED_ERROR(io::load_safetensors(path("model.safetensors")),
                       "model.safetensors: not a regular file (a named pipe)");
  EXPECT_BOUNDED_ERROR(io::read_file("/dev/zero"),
                       "/dev/zero: not a regular file (a character device)");
  fs::create_directory(path("folder"));
  EXPECT_BOUNDED_ERROR(io::read_file(path("folder")),
                       path("folder") + ": not a regular file (a folder)");
  EXPECT_BOUNDED_ERROR(io::read_file(path("missing")),
                       path("missing") + ": cannot open (No such file or directory)");
}

TEST_F(AtomicFile, ReadFileRefusesAFileOverItsLimitBeforeReading) {
  write_text(path("big.safetensors"), "x");
  ASSERT_EQ(::truncate(path("big.safetensors").c_str(), off_t{1} << 40), 0);  // 1 TiB, sparse
  EXPECT_BOUNDED_ERROR(io::read_file(path("big.safetensors")),
                       "big.safetensors: 1099511627776 bytes, over the limit of 1073741824 bytes");
}

TEST_F(AtomicFile, ReadFileReadsToTheEndNotToTheStatedSize) {
  // Files in /proc state a size of 0; the bytes are there all the same.
  EXPECT_NE(io::read_file("/proc/self/status").find("Name:"), std::string::npos);
}

// ---- writing ------------------------------------------------------------------------------

TEST_F(AtomicFile, StaleTemporariesOfDeadWritersAreSwept) {
  const std::string target = path("m.safetensors");
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(::getppid());
  for (const std::string& name :
       std::vector<std::string>{"m.safetensors.tmp-" + dead + "-123",      // swept
                                "m.safetensors.tmp-" + alive + "-456",     // its writer lives
                                "other.safetensors.tmp-" + dead + "-789",  // another target's
                                "m.safetensors.tmp-notes"}) {              // not a temporary's name
    write_text(path(name), "junk");
  }
  write_text(target, "new");
  EXPECT_EQ(io::read_file(target), "new");
  EXPECT_EQ(listing(), (std::vector<std::string>{
                           "m.safetensors", "m.safetensors.tmp-" + alive + "-456",
                           "m.safetensors.tmp-notes", "other.safetensors.tmp-" + dead + "-789"}));
}

TEST_F(AtomicFile, AWriterKilledMidWriteLeavesNothingAfterTheNextWrite) {
  const std::string target = path("m.safetensors");
  write_text(target, "old");
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    io::write_file_atomically(target, [](const io::ByteSink& sink) {
      sink("partial", 7);
      ::raise(SIGKILL);
    });
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(io::read_file(target), "old");  // the killed write damaged nothing
  EXPECT_GT(listing().size(), 1u);          // but left its temporary (and lock) behind
  write_text(target, "new");
  EXPECT_EQ(io::read_file(target), "new");
  EXPECT_EQ(listing(), (std::vector<std::string>{"m.safetensors"}));
}

TEST_F(AtomicFile, ASecondWriterOfTheSameTargetIsRefusedNamingTheFirst) {
  const std::string target = path("m.safetensors");
  write_text(target, "old");
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    io::write_file_atomically(target, [&](const io::ByteSink& sink) {
      sink("first", 5);
      char c = 1;
      if (::write(ready[1], &c, 1) != 1 || ::read(release[0], &c, 1) < 0)
        _exit(2);  // hold the write open
    });
    _exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the child is inside its write
  EXPECT_BOUNDED_ERROR(write_text(target, "second"), "cannot write " + target + ": process " +
                                                         std::to_string(child) + " is writing it");
  EXPECT_LOOM_ERROR(write_text(target, "second"),
                    "process " + std::to_string(child) + " is writing it");
  EXPECT_EQ(io::read_file(target), "old");
  ::close(release[1]);  // let the child finish
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(ready[0]);
  EXPECT_EQ(io::read_file(target), "first");
  write_text(target, "second");  // now free
  EXPECT_EQ(io::read_file(target), "second");
  EXPECT_EQ(listing(), (std::vector<std::string>{"m.safetensors"}));
}

TEST_F(AtomicFile, AFailedWriteLeavesTheTargetAndNoLitter) {
  const std::string target = path("m.safetensors");
  write_text(target, "old");
  EXPECT_LOOM_ERROR(io::write_file_atomically(target,
                                              [](const io::ByteSink& sink) {
                                                sink("partial", 7);
                                                LOOM_FAIL("disk on fire");
                                              }),
                    "disk on fire");
  EXPECT_EQ(io::read_file(target), "old");
  EXPECT_EQ(listing(), (std::vector<std::string>{"m.safetensors"}));
}

}  // namespace
}  // namespace loom
