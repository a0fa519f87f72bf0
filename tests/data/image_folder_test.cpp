// ImageFolder: class folders and Kaggle's flat layout, labels by sorted class name, file types
// in any case, the scanning errors (missing root; an empty, unreadable or undecodable class;
// entries that are not files), strict mode, InMemoryDataset, and the real cats/dogs
// photographs when they are present.
#include "loom/data/image_folder.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "data_testing.h"
#include "loom/data/encode.h"
#include "loom/data/memory_dataset.h"

namespace loom::data {
namespace {

namespace fs = std::filesystem;
using testing::random_image;
using testing::solid_image;
using testing::TempDir;

void write_png(const std::string& path, int value) {
  write_file(path, encode_png(solid_image(6, 5, 3, value)));
}

TEST(ImageFolder, ClassFoldersSortedByNameWithAnyCaseExtension) {
  TempDir dir;
  for (const char* cls : {"dog", "cat", "bird"}) fs::create_directory(dir / cls);
  write_png(dir / "dog/a.PNG", 30);
  write_png(dir / "dog/b.png", 31);
  write_file(dir / "cat/x.JPeG", encode_jpeg(solid_image(6, 5, 3, 200), 100));
  write_png(dir / "bird/z.png", 10);
  write_png(dir / "bird/notes.txt", 1);  // not an image name: ignored
  fs::create_directory(dir / "dog/subfolder");
  ImageFolder folder(dir.path());
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"bird", "cat", "dog"}));
  ASSERT_EQ(folder.size(), 4);
  EXPECT_EQ(folder.label(0), 0);
  EXPECT_EQ(folder.label(1), 1);
  EXPECT_EQ(folder.label(2), 2);
  EXPECT_EQ(folder.label(3), 2);
  EXPECT_EQ(fs::path(folder.path(2)).filename(), "a.PNG");
  const Example e = folder.get(3);
  EXPECT_EQ(e.label, 2);
  EXPECT_EQ(e.image.shape(), (Shape{6, 5, 3}));
  EXPECT_EQ(e.image.to_vector<int64_t>()[0], 31);
  EXPECT_NEAR(folder.get(1).image.to_vector<int64_t>()[0], 200, 2);
  EXPECT_LOOM_ERROR(folder.get(4), "index 4 out of range for 4 images");
  EXPECT_TRUE(is_image_file_name("a.Jpg"));
  EXPECT_FALSE(is_image_file_name(".jpg"));
  EXPECT_FALSE(is_image_file_name("a.gif"));
}

TEST(ImageFolder, DecodeOptionsResize) {
  TempDir dir;
  fs::create_directory(dir / "only");
  write_png(dir / "only/a.png", 50);
  ImageFolderOptions options;
  options.decode.height = 3;
  options.decode.width = 4;
  EXPECT_EQ(ImageFolder(dir.path(), options).get(0).image.shape(), (Shape{3, 4, 3}));
}

TEST(ImageFolder, KaggleFlatLayoutLabelsFromPrefix) {
  TempDir dir;
  write_png(dir / "dog.2.png", 1);
  write_png(dir / "cat.10.png", 2);
  write_png(dir / "cat.9.jpg", 3);  // a PNG named .jpg still decodes: the bytes decide
  write_png(dir / "7.png", 4);      // no class prefix: skipped with a warning
  ImageFolderOptions options;
  options.layout = FolderLayout::KaggleFlat;
  ImageFolder folder(dir.path(), options);
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(folder.size(), 3);
  EXPECT_EQ(fs::path(folder.path(0)).filename(), "cat.10.png");
  EXPECT_EQ(folder.label(0), 0);
  EXPECT_EQ(folder.label(1), 0);
  EXPECT_EQ(folder.label(2), 1);
  EXPECT_EQ(folder.get(1).image.to_vector<int64_t>()[0], 3);
  options.on_bad_input = OnBadInput::Throw;
  EXPECT_LOOM_ERROR(ImageFolder(dir.path(), options), "7.png has no class prefix");
}

TEST(ImageFolder, MissingRootAndNoImages) {
  EXPECT_LOOM_ERROR(ImageFolder("/nonexistent/loom/root"),
                    "root folder /nonexistent/loom/root does not exist");
  TempDir dir;
  write_png(dir / "file.png", 1);
  EXPECT_LOOM_ERROR(ImageFolder(dir / "file.png"), "is not a folder");
  EXPECT_LOOM_ERROR(ImageFolder(dir.path()), "no .jpg, .jpeg or .png files under");
}

TEST(ImageFolder, EmptyClassFolderIsAnErrorInEveryMode) {
  // Training on without the class would make a model that can never predict it.
  TempDir dir;
  fs::create_directory(dir / "cat");
  fs::create_directory(dir / "dog");
  write_png(dir / "dog/a.png", 1);
  EXPECT_LOOM_ERROR(ImageFolder(dir.path()), "class folder " + (dir / "cat") + " has no images");
  ImageFolderOptions strict;
  strict.on_bad_input = OnBadInput::Throw;
  EXPECT_LOOM_ERROR(ImageFolder(dir.path(), strict),
                    "class folder " + (dir / "cat") + " has no images");
}

TEST(ImageFolder, ClassWhoseEveryImageFailsToDecodeIsAnErrorInEveryMode) {
  // The case: every cat photograph is broken, so Skip mode would train a dog-only model.
  TempDir dir;
  fs::create_directory(dir / "cat");
  fs::create_directory(dir / "dog");
  write_file(dir / "cat/1.jpg", {'n', 'o', 'p', 'e'});
  write_file(dir / "cat/2.jpg", {});
  std::vector<uint8_t> cut = encode_jpeg(solid_image(16, 16, 3, 40));
  cut.resize(cut.size() / 2);
  write_file(dir / "cat/3.jpg", cut);
  write_png(dir / "dog/a.png", 1);
  EXPECT_LOOM_ERROR(ImageFolder(dir.path()),
                    "class folder " + (dir / "cat") + " has no image that decodes (3 files");
  // Strict mode names the first bad file itself.
  ImageFolderOptions strict;
  strict.on_bad_input = OnBadInput::Throw;
  EXPECT_LOOM_ERROR(ImageFolder(dir.path(), strict),
                    (dir / "cat/1.jpg") + ": neither a JPEG nor a PNG");
  // One good image is enough for the class to stand; the bad ones are the loader's to skip.
  write_png(dir / "cat/4.png", 2);
  EXPECT_EQ(ImageFolder(dir.path()).size(), 5);
  // The same for the flat layout, whose classes come from file names.
  TempDir flat;
  write_file(flat / "cat.1.jpg", {'n', 'o'});
  write_png(flat / "dog.1.png", 3);
  ImageFolderOptions flat_options;
  flat_options.layout = FolderLayout::KaggleFlat;
  EXPECT_LOOM_ERROR(ImageFolder(flat.path(), flat_options),
                    "class cat in " + flat.path() + " has no image that decodes (1 file");
}

TEST(ImageFolder, EntriesWithImageNamesThatAreNotFilesAreReported) {
  TempDir dir;
  fs::create_directory(dir / "cat");
  write_png(dir / "cat/a.png", 1);
  fs::create_directory(dir / "cat/album.jpg");
  ASSERT_EQ(::mkfifo((dir / "cat/pipe.png").c_str(), 0644), 0);
  ::testing::internal::CaptureStderr();
  ImageFolder folder(dir.path());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(folder.size(), 1);
  EXPECT_NE(err.find((dir / "cat/album.jpg") + " is not a regular file (a folder)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find((dir / "cat/pipe.png") + " is not a regular file (a named pipe)"),
            std::string::npos)
      << err;
  ImageFolderOptions strict;
  strict.on_bad_input = OnBadInput::Throw;
  EXPECT_LOOM_ERROR(ImageFolder(dir.path(), strict),
                    (dir / "cat/album.jpg") + " is not a regular file (a folder)");
}

TEST(ImageFolder, UnreadableClassFolder) {
  // Root reads every folder whatever its mode, so the check runs in a child process that has
  // dropped to the unprivileged user "nobody" (65534) when the test runs as root.
  TempDir dir;
  fs::permissions(dir.path(),
                  fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::create_directory(dir / "cat");
  fs::create_directory(dir / "dog");
  write_png(dir / "cat/a.png", 1);
  write_png(dir / "dog/b.png", 2);
  for (const char* d : {"cat", "dog"}) {
    fs::permissions(dir / d,
                    fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  }
  fs::permissions(dir / "dog", fs::perms::none);
  fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Drop the groups first: root's group 0 would otherwise keep group access to the folders.
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
      _exit(3);
    if (geteuid() == 0) _exit(3);
    int code = 0;
    try {
      ImageFolderOptions strict;
      strict.on_bad_input = OnBadInput::Throw;
      ImageFolder folder(dir.path(), strict);
      code = 1;  // should have thrown
    } catch (const Error& e) {
      code = std::string(e.what()).find("cannot read class folder " + (dir / "dog")) !=
                     std::string::npos
                 ? 0
                 : 2;
    }
    try {
      ImageFolder lenient(dir.path());  // an error too: the class would have no images
      if (code == 0) code = 4;
    } catch (const Error& e) {
      if (code == 0 && std::string(e.what()).find("cannot read class folder " + (dir / "dog")) ==
                           std::string::npos)
        code = 5;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3)
    GTEST_SKIP() << "cannot drop privileges to check an unreadable folder";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: no error, 2: wrong message, 4: skip mode kept going, 5: skip mode's wrong message";
}

TEST(InMemoryDataset, DecodesOnceAndSkipsBadFiles) {
  TempDir dir;
  fs::create_directory(dir / "a");
  fs::create_directory(dir / "b");
  const Tensor img0 = random_image(4, 4, 3, 11), img1 = random_image(4, 4, 3, 12);
  write_file(dir / "a/0.png", encode_png(img0));
  write_file(dir / "a/1.jpg", {});  // zero bytes
  write_file(dir / "b/2.png", encode_png(img1));
  ImageFolder folder(dir.path());
  ASSERT_EQ(folder.size(), 3);
  ::testing::internal::CaptureStderr();
  InMemoryDataset memory(folder, 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("1.jpg: empty file"), std::string::npos) << err;
  EXPECT_NE(err.find("skipped 1 of 3"), std::string::npos) << err;
  ASSERT_EQ(memory.size(), 2);
  EXPECT_EQ(memory.skipped(), 1);
  EXPECT_EQ(memory.get(0).image.to_vector<int64_t>(), img0.to_vector<int64_t>());
  EXPECT_EQ(memory.get(1).image.to_vector<int64_t>(), img1.to_vector<int64_t>());
  EXPECT_EQ(memory.get(1).label, 1);
  EXPECT_LOOM_ERROR(InMemoryDataset(folder, 2, OnBadInput::Throw), "1.jpg: empty file");
  EXPECT_LOOM_ERROR(InMemoryDataset(folder, 0), "num_threads must be at least 1");
}

// A dataset of small random images that counts nothing and fails nothing.
class CountedImages : public Dataset {
 public:
  explicit CountedImages(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    return {random_image(2, 2, 3, static_cast<uint64_t>(index) + 1), index % 2};
  }

 private:
  int64_t n_;
};

// The progress callback runs on the constructing thread only, moves forward, is called at most
// about a hundred times for 1,000 samples on 3 threads (fewer when the other threads take most
// of them, as under load), and ends at (total, total).
TEST(InMemoryDataset, ReportsProgressOnTheConstructingThread) {
  const CountedImages source(1000);
  std::vector<std::pair<int64_t, int64_t>> calls;
  bool other_thread = false;
  const std::thread::id me = std::this_thread::get_id();
  InMemoryDataset memory(source, 3, OnBadInput::Skip, [&](int64_t done, int64_t total) {
    other_thread = other_thread || std::this_thread::get_id() != me;
    calls.emplace_back(done, total);
  });
  EXPECT_EQ(memory.size(), 1000);
  EXPECT_FALSE(other_thread);
  ASSERT_GE(calls.size(), 1u);
  EXPECT_LE(calls.size(), 102u);
  EXPECT_EQ(calls.back(), std::make_pair(int64_t{1000}, int64_t{1000}));
  for (size_t i = 1; i < calls.size(); ++i) {
    EXPECT_GE(calls[i].first, calls[i - 1].first);
    EXPECT_EQ(calls[i].second, 1000);
  }
}

TEST(InMemoryDataset, WarningsShowControlCharactersInFileNamesEscaped) {
  // A downloaded file's name may hold a newline or a terminal escape: each warning stays one
  // line, and nothing reaches the terminal raw.
  TempDir dir;
  fs::create_directory(dir / "cat");
  write_png(dir / "cat/a.png", 1);
  write_file(dir / "cat/b\n\x1b[2J.jpg", {'n', 'o'});
  ImageFolder folder(dir.path());
  ::testing::internal::CaptureStderr();
  InMemoryDataset memory(folder);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(memory.size(), 1);
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_NE(err.find("cat/b\\x0a\\x1b[2J.jpg: neither a JPEG nor a PNG"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;  // the skip and the count
}

TEST(InMemoryDataset, NoDecodableSampleAtAllIsAnError) {
  // A dataset whose every sample fails is an error even in Skip mode, not an empty dataset.
  struct AllBad : Dataset {
    int64_t size() const override { return 3; }
    Example get(int64_t index) const override {
      throw BadSample(::loom::detail::concat("/photos/", index, ".jpg: not a readable JPEG"));
    }
  } bad;
  ::testing::internal::CaptureStderr();
  EXPECT_LOOM_ERROR(InMemoryDataset(bad, 2),
                    "InMemoryDataset: none of the 3 samples could be used");
  ::testing::internal::GetCapturedStderr();
  EXPECT_LOOM_ERROR(InMemoryDataset(bad, 2, OnBadInput::Throw),
                    "/photos/0.jpg: not a readable JPEG");
}

TEST(ImageFolderRealData, CatsDogsLabelsAndDecoding) {
  LOOM_REQUIRE_CATS_DOGS(root);
  ImageFolderOptions options;
  options.decode.height = options.decode.width = 64;
  options.on_bad_input = OnBadInput::Throw;
  ImageFolder val(root + "/val", options);
  EXPECT_EQ(val.classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(val.size(), 2000);
  EXPECT_EQ(val.label(0), 0);
  EXPECT_EQ(val.label(1999), 1);
  // Every validation image decodes in strict mode, to 64x64 RGB with some variation.
  InMemoryDataset memory(val, 2, OnBadInput::Throw);
  EXPECT_EQ(memory.size(), 2000);
  const Tensor img = memory.get(123).image;
  EXPECT_EQ(img.shape(), (Shape{64, 64, 3}));
  const auto v = img.to_vector<int64_t>();
  EXPECT_GT(*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end()), 30);
}

}  // namespace
}  // namespace loom::data
