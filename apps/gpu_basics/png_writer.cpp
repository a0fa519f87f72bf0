// write_gray_png: libpng with its longjmp error handling kept inside one function, so a failure
// becomes a loom::Error after the temporary file is closed and removed.
#include "png_writer.h"

#include <loom/loom.h>
#include <png.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>

namespace loom::gpu_basics {
namespace {

// Returns an empty string on success, else what went wrong. No C++ object with a destructor
// may live across setjmp here, which is why this is plain C in spirit.
std::string write_png_file(FILE* file, const uint8_t* gray, int64_t width, int64_t height) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (png == nullptr) return "png_create_write_struct failed";
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return "png_create_info_struct failed";
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return "libpng failed while writing";
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < height; ++y) {
    png_write_row(png, const_cast<png_bytep>(gray + y * width));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return "";
}

}  // namespace

void write_gray_png(const std::string& path, const std::vector<uint8_t>& gray, int64_t width,
                    int64_t height) {
  LOOM_CHECK(!path.empty(), "write_gray_png: empty path");
  LOOM_CHECK(width >= 1 && height >= 1 && width <= (1 << 30) && height <= (1 << 30),
             "write_gray_png: bad size ", width, "x", height, " for ", path);
  LOOM_CHECK(static_cast<int64_t>(gray.size()) == width * height, "write_gray_png: ", gray.size(),
             " pixels do not make a ", width, "x", height, " image for ", path);
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  FILE* file = std::fopen(temporary.c_str(), "wb");
  LOOM_CHECK(file != nullptr, "write_gray_png: cannot create ", temporary, ": ",
             std::strerror(errno));
  std::string failure = write_png_file(file, gray.data(), width, height);
  if (std::fflush(file) != 0 || fsync(fileno(file)) != 0) {
    if (failure.empty()) failure = std::string("flush failed: ") + std::strerror(errno);
  }
  if (std::fclose(file) != 0 && failure.empty()) {
    failure = std::string("close failed: ") + std::strerror(errno);
  }
  if (failure.empty() && std::rename(temporary.c_str(), path.c_str()) != 0) {
    failure = std::string("rename failed: ") + std::strerror(errno);
  }
  if (!failure.empty()) {
    std::remove(temporary.c_str());
    LOOM_FAIL("write_gray_png: cannot write ", path, ": ", failure);
  }
}

}  // namespace loom::gpu_basics
