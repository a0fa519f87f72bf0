// Internal: binds a runtime layout choice to a compile-time one for the CUDA kernels that have
// an NCHW and a channels-last (NHWC) variant (convolution's bias pass, batch norm, pooling).
#pragma once

#include <type_traits>

namespace loom::detail {

// Calls launch(std::true_type{}) for channels-last data, launch(std::false_type{}) for NCHW.
template <typename Launch>
void with_channels_last(bool channels_last, Launch&& launch) {
  if (channels_last) {
    launch(std::true_type{});
  } else {
    launch(std::false_type{});
  }
}

}  // namespace loom::detail
