// CPU flip: each output element read from its source (flip_backend.h), a copy of its bytes.
#include "loom/ops/flip_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename Word>
void flip_words(const Tensor& x, const Tensor& out, const FlipRuns& runs) {
  const Word* in = static_cast<const Word*>(x.raw_data());
  Word* o = static_cast<Word*>(out.raw_data());
  parallel_for(x.numel(), [&](int64_t i) { o[i] = in[flip_source(i, runs)]; });
}

}  // namespace

void cpu_flip(const Tensor& x, const Tensor& out, const FlipRuns& runs) {
  switch (element_size(x.dtype())) {
    case 1:
      return flip_words<uint8_t>(x, out, runs);
    case 2:
      return flip_words<uint16_t>(x, out, runs);
    case 4:
      return flip_words<uint32_t>(x, out, runs);
    case 8:
      return flip_words<uint64_t>(x, out, runs);
  }
  LOOM_FAIL("flip: no element size ", element_size(x.dtype()));
}

}  // namespace loom::detail
