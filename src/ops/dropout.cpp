// dropout: checks, the mask's uniform draws (loom::rand, identical on every device for one
// seed), device dispatch and the autograd node, which reuses the draws as its mask.
#include "loom/ops/dropout.h"

#include "loom/ops/dispatch.h"
#include "loom/ops/dropout_backend.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

Tensor apply_mask(const Tensor& src, const Tensor& u, double p) {
  Tensor out = empty(src.shape(), src.options());
  if (src.is_cuda()) {
    LOOM_CUDA_DISPATCH("dropout", detail::cuda_dropout_apply(src, u, p, out));
  } else {
    detail::cpu_dropout_apply(src, u, p, out);
  }
  return out;
}

}  // namespace

Tensor dropout(const Tensor& x_in, double p, bool training, Generator* gen) {
  LOOM_CHECK(x_in.defined(), "dropout: input is undefined");
  LOOM_CHECK(p >= 0 && p < 1, "dropout: probability p must be in [0, 1), got ", p);
  LOOM_CHECK(is_floating(x_in.dtype()), "dropout: input must be floating point, got ",
             x_in.dtype());
  if (!training || p == 0) return x_in;
  const Tensor x = x_in.contiguous();
  // Bfloat16 values draw in float32: the same mask as float32 values of the same seed.
  const Tensor u =
      rand(x.shape(), x.options().dtype(x.dtype() == kBFloat16 ? kFloat32 : x.dtype()), gen);
  return record("dropout", apply_mask(x, u, p), {x_in}, [u, p](const Tensor& grad) {
    return std::vector<Tensor>{apply_mask(grad.contiguous(), u, p)};
  });
}

}  // namespace loom
