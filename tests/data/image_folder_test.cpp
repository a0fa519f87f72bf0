// ImageFolder: class folders and Kaggle's flat layout, labels by sorted class name, file types
// in any case, the scanning errors (missing root, empty or unreadable class folder), strict
// mode, InMemoryDataset, and the real cats/dogs photographs when they are present.
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "data/encode.h"
#include "data/image_folder.h"
#include "data/memory_dataset.h"
#include "data_testing.h"

namespace loom::data {
namespace {

namespace fs = std::filesystem;
using testing::random_image;
using testing::solid_image;
using testing::TempDir;

void write_png(const std::string& path, int value) { write_file(path, encode_png(solid_image(6, 5, 3, value))); }

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
  EXPECT_LOOM_ERROR(ImageFolder("/nonexistent/loom/root"), "root folder /nonexistent/loom/root does not exist");
  TempDir dir;
  write_png(dir / "file.png", 1);
  EXPECT_LOOM_ERROR(ImageFolder(dir / "file.png"), "is not a folder");
  EXPECT_LOOM_ERROR(ImageFolder(dir.path()), "no .jpg, .jpeg or .png files under");
}

TEST(ImageFolder, EmptyClassFolderWarnsOrThrows) {
  TempDir dir;
  fs::create_directory(dir / "cat");
  fs::create_directory(dir / "dog");
  write_png(dir / "dog/a.png", 1);
  ::testing::internal::CaptureStderr();
  ImageFolder folder(dir.path());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("class folder " + (dir / "cat") + " has no images"), std::string::npos) << err;
  EXPECT_EQ(folder.classes().size(), 2u);  // the empty class keeps its label
  EXPECT_EQ(folder.label(0), 1);
  ImageFolderOptions strict;
  strict.on_bad_input = OnBadInput::Throw;
  EXPECT_LOOM_ERROR(ImageFolder(dir.path(), strict), "/cat has no images");
}

TEST(ImageFolder, UnreadableClassFolder) {
  // Root reads every folder whatever its mode, so the check runs in a child process that has
  // dropped to the unprivileged user "nobody" (65534) when the test runs as root.
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::create_directory(dir / "cat");
  fs::create_directory(dir / "dog");
  write_png(dir / "cat/a.png", 1);
  write_png(dir / "dog/b.png", 2);
  for (const char* d : {"cat", "dog"}) {
    fs::permissions(dir / d, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  }
  fs::permissions(dir / "dog", fs::perms::none);
  fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Drop the groups first: root's group 0 would otherwise keep group access to the folders.
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    if (geteuid() == 0) _exit(3);
    int code = 0;
    try {
      ImageFolderOptions strict;
      strict.on_bad_input = OnBadInput::Throw;
      ImageFolder folder(dir.path(), strict);
      code = 1;  // should have thrown
    } catch (const Error& e) {
      code = std::string(e.what()).find("cannot read class folder " + (dir / "dog")) != std::string::npos ? 0 : 2;
    }
    try {
      ImageFolder lenient(dir.path());  // skips dog with a warning
      if (code == 0 && lenient.size() != 1) code = 4;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "skip mode threw: %s\n", e.what());
      code = 5;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "cannot drop privileges to check an unreadable folder";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error, 2: wrong message, 4: skip mode kept the folder, 5: skip mode threw";
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
