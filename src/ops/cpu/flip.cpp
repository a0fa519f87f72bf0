// CPU flip: each output element read from its source (flip_backend.h), a copy of its bytes.
#include <cstring>

#include "loom/ops/flip_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename Word>
void flip_words(const Word* x, Word* out, int64_t n, const FlipRuns& runs) {
  parallel_for(n, [&](int64_t i) { out[i] = x[flip_source(i, runs)]; });
}

}  // namespace

void cpu_flip(const Tensor& x, const Tensor& out, const FlipRuns& runs) {
  const int64_t n = x.numel();
  switch (element_size(x.dtype())) {
    case 1:
      return flip_words(static_cast<const uint8_t*>(x.raw_data()),
                        static_cast<uint8_t*>(out.raw_data()), n, runs);
    case 2:
      return flip_words(static_cast<const uint16_t*>(x.raw_data()),
                        static_cast<uint16_t*>(out.raw_data()), n, runs);
    case 4:
      return flip_words(static_cast<const uint32_t*>(x.raw_data()),
                        static_cast<uint32_t*>(out.raw_data()), n, runs);
    case 8:
      return flip_words(static_cast<const uint64_t*>(x.raw_data()),
                        static_cast<uint64_t*>(out.raw_data()), n, runs);
  }
  LOOM_FAIL("flip: no element size ", element_size(x.dtype()));
}

}  // namespace loom::detail
