// The per-thread autocast switch (autocast.h).
#include "loom/tensor/autocast.h"

namespace loom {

namespace {
thread_local bool t_autocast = false;
}

Autocast::Autocast(bool enabled, DType dtype) : previous_(t_autocast) {
  LOOM_CHECK(dtype == kBFloat16, "Autocast: computes in bfloat16 only, got ", dtype_name(dtype));
  t_autocast = enabled;
}

Autocast::~Autocast() { t_autocast = previous_; }

bool autocast_enabled() { return t_autocast; }

namespace detail {

Tensor autocast_operand(const Tensor& t) {
  if (!t_autocast || !t.defined() || !t.is_cuda() || t.dtype() != kFloat32) return t;
  return t.to(kBFloat16);
}

}  // namespace detail

}  // namespace loom
