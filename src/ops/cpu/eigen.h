// Eigen as the CPU kernels include it: single-threaded inside. loom's parallel_for threads
// every kernel itself, so Eigen's own OpenMP GEMM (whose threads busy-wait for each other,
// a disaster when a core is shared) would only nest inside ours. Every CPU source that uses
// Eigen includes this header rather than <Eigen/Core>, so all agree on the setting.
#pragma once

#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif
#include <Eigen/Core>
