// The Mandelbrot set as an image of iteration counts (the seed's second program), computed by
// a CUDA kernel or a multithreaded CPU loop, and turned into a grayscale PNG.
#pragma once

#include <loom/loom.h>

#include <string>
#include <vector>

#include "mandelbrot_point.h"

namespace loom::gpu_basics {

// Throws loom::Error naming the field when a size or the iteration count is out of range.
void check_mandelbrot_spec(const MandelbrotSpec& spec);

// int32 counts of shape [height, width] on `device`; counts[y][x] = mandelbrot_pixel(spec, x, y).
Tensor mandelbrot(const MandelbrotSpec& spec, Device device);
// Fills `counts` (int32 [height, width], contiguous) where it lives, without allocating.
void mandelbrot_into(const MandelbrotSpec& spec, const Tensor& counts);

// Counts (on any device) as 8-bit gray, 255 * count / max_iters: the set itself is white.
std::vector<uint8_t> counts_to_gray(const Tensor& counts, int32_t max_iters);

}  // namespace loom::gpu_basics
