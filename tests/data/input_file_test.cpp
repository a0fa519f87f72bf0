// Reading input files that are not what their names say: a FIFO, /dev/zero, a folder, a file
// far larger than any photograph (sparse, so the test costs no disk). Each must end in an error
// naming the path and the problem within 2 s and 512 MB, through load_image and the loader.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "bounded_child.h"
#include "data_testing.h"
#include "loom/data/data_loader.h"
#include "loom/data/decode.h"
#include "loom/data/encode.h"
#include "loom/data/image_folder.h"

namespace loom::data {
namespace {

namespace fs = std::filesystem;
using testing::solid_image;
using testing::TempDir;

TEST(InputFile, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "cat.jpg").c_str(), 0644), 0);
  // Nobody writes to it: opening it for reading would block for ever.
  EXPECT_BOUNDED_ERROR(load_image(dir / "cat.jpg"), "cat.jpg: not a regular file (a named pipe)");
}

TEST(InputFile, DevZeroIsRefusedBeforeReading) {
  EXPECT_BOUNDED_ERROR(load_image("/dev/zero"),
                       "/dev/zero: not a regular file (a character device)");
  // Also behind a symbolic link with an image's name.
  TempDir dir;
  fs::create_symlink("/dev/zero", dir / "dog.jpg");
  EXPECT_BOUNDED_ERROR(load_image(dir / "dog.jpg"),
                       "dog.jpg: not a regular file (a character device)");
}

TEST(InputFile, FolderIsRefusedNamingIt) {
  TempDir dir;
  fs::create_directory(dir / "album.jpg");
  EXPECT_BOUNDED_ERROR(load_image(dir / "album.jpg"), "album.jpg: not a regular file (a folder)");
}

TEST(InputFile, FileOverTheSizeLimitIsRefusedBeforeReading) {
  TempDir dir;
  const std::string path = dir / "huge.jpg";
  write_file(path, encode_jpeg(solid_image(8, 8, 3, 50)));
  ASSERT_EQ(::truncate(path.c_str(), off_t{1} << 40), 0);  // 1 TiB, sparse
  EXPECT_BOUNDED_ERROR(load_image(path),
                       "huge.jpg: 1099511627776 bytes, over the limit of 134217728 bytes");
}

TEST(InputFile, StrictLoaderNamesAFileThatBecameAFifo) {
  // The folder is scanned while the file is a photograph; by the time the loader reads it, it is
  // a FIFO. Strict mode must end the epoch with an error naming it, not block a worker.
  TempDir dir;
  fs::create_directory(dir / "cat");
  for (const char* name : {"a.png", "b.png"})
    write_file(dir / ("cat/" + std::string(name)), encode_png(solid_image(4, 4, 3, 9)));
  ImageFolder folder(dir.path());
  fs::remove(dir / "cat/b.png");
  ASSERT_EQ(::mkfifo((dir / "cat/b.png").c_str(), 0644), 0);
  DataLoaderOptions options;
  options.batch_size = 2;
  options.shuffle = false;
  options.num_workers = 1;
  options.on_bad_input = OnBadInput::Throw;
  EXPECT_BOUNDED_ERROR(
      {
        DataLoader loader(folder, options);
        loader.start_epoch(0);
        while (loader.next()) {
        }
      },
      "cat/b.png: not a regular file (a named pipe)");
}

}  // namespace
}  // namespace loom::data
