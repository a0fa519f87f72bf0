// batch_norm on the CPU: per-channel sums (one thread per channel, in double) and elementwise
// passes, using the shared rules of batch_norm_math.h.
#include <vector>

#include "loom/ops/batch_norm_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename T>
T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// For each channel c: term(i, a, b) over its elements i, then finish(c, a, b).
template <typename Term, typename Finish>
void channel_reduce(const BnGeometry& g, Term term, Finish finish) {
  parallel_for(
      g.c,
      [&](int64_t c) {
        double a = 0.0, b = 0.0;
        for (int64_t n = 0; n < g.n; ++n) {
          const int64_t base = (n * g.c + c) * g.inner;
          for (int64_t k = 0; k < g.inner; ++k) term(base + k, a, b);
        }
        finish(c, a, b);
      },
      /*grain=*/1);
}

// Runs body(i, channel) over every element.
template <typename Body>
void for_each_element(const BnGeometry& g, Body body) {
  parallel_for(
      g.n * g.c,
      [&](int64_t nc) {
        const int64_t c = nc % g.c;
        for (int64_t k = 0; k < g.inner; ++k) body(nc * g.inner + k, c);
      },
      /*grain=*/std::max<int64_t>(1, kParallelGrain / g.inner));
}

}  // namespace

void cpu_batch_norm_stats(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                          const Tensor& invstd, const Tensor& running_mean,
                          const Tensor& running_var, double momentum, double eps) {
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "batch_norm", [&] {
    using P = bn_param_t<scalar_t>;
    BnChannels<P> ch;
    ch.mean = mean.data_ptr<P>(), ch.invstd = invstd.data_ptr<P>();
    ch.running_mean = ptr_or_null<P>(running_mean);
    ch.running_var = ptr_or_null<P>(running_var);
    const scalar_t* xp = x.data_ptr<scalar_t>();
    channel_reduce(
        g,
        [&](int64_t i, double& s, double& ss) {
          const double v = xp[i];
          s += v, ss += v * v;
        },
        [&](int64_t c, double s, double ss) {
          bn_finish_stats(ch, c, s, ss, g.count(), momentum, eps);
        });
  });
}

void cpu_batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                               const Tensor& mean, const Tensor& invstd) {
  LOOM_DISPATCH_FLOATING(mean.dtype(), "batch_norm", [&] {
    const scalar_t* rm = running_mean.data_ptr<scalar_t>();
    const scalar_t* rv = running_var.data_ptr<scalar_t>();
    scalar_t* m = mean.data_ptr<scalar_t>();
    scalar_t* is = invstd.data_ptr<scalar_t>();
    for (int64_t c = 0; c < mean.numel(); ++c) {
      m[c] = rm[c];
      is[c] = static_cast<scalar_t>(1.0 / std::sqrt(static_cast<double>(rv[c]) + eps));
    }
  });
}

void cpu_batch_norm_apply(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                          const Tensor& invstd, const Tensor& weight, const Tensor& bias, bool relu,
                          const Tensor& out) {
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "batch_norm", [&] {
    using P = bn_param_t<scalar_t>;
    BnChannels<P> ch;
    ch.mean = mean.data_ptr<P>(), ch.invstd = invstd.data_ptr<P>();
    ch.weight = ptr_or_null<P>(weight), ch.bias = ptr_or_null<P>(bias);
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* yp = out.data_ptr<scalar_t>();
    for_each_element(g, [&](int64_t i, int64_t c) { yp[i] = bn_apply_at(ch, c, xp[i], relu); });
  });
}

void cpu_batch_norm_backward(const Tensor& dy, const Tensor& x, const BnGeometry& g,
                             const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             const Tensor& bias, bool relu, bool training, const Tensor& grad_input,
                             const Tensor& grad_weight, const Tensor& grad_bias) {
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "batch_norm backward", [&] {
    using P = bn_param_t<scalar_t>;
    BnChannels<P> ch;
    ch.mean = mean.data_ptr<P>(), ch.invstd = invstd.data_ptr<P>();
    ch.weight = ptr_or_null<P>(weight), ch.bias = ptr_or_null<P>(bias);
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* gp = dy.data_ptr<scalar_t>();
    P* dw = ptr_or_null<P>(grad_weight);
    P* db = ptr_or_null<P>(grad_bias);
    std::vector<P> coefficients(3 * g.c);
    const BnGradCoefficients<P> k{coefficients.data(), coefficients.data() + g.c,
                                  coefficients.data() + 2 * g.c};
    channel_reduce(
        g,
        [&](int64_t i, double& a, double& b) {
          bn_add_grad_terms(ch, g.channel_of(i), xp[i], gp[i], relu, a, b);
        },
        [&](int64_t c, double a, double b) {
          bn_finish_grad(ch, k, c, a, b, g.count());
          bn_param_grads(ch, c, a, b, dw, db);
        });
    if (!grad_input.defined()) return;
    scalar_t* dx = grad_input.data_ptr<scalar_t>();
    for_each_element(g, [&](int64_t i, int64_t c) {
      dx[i] = bn_grad_input_at(ch, k, c, xp[i], gp[i], training, relu);
    });
  });
}

}  // namespace loom::detail
