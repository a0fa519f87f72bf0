#include "testing.h"

#include <cmath>
#include <sstream>

namespace loom::testing {

namespace {

double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  const std::vector<double> v = out.to(kFloat64).to_vector<double>();
  double s = 0.0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

}  // namespace

std::string gradcheck(const Function& f, const std::vector<Tensor>& inputs,
                      const GradcheckOptions& options) {
  for (const Tensor& t : inputs) {
    if (!t.defined() || !t.requires_grad()) continue;
    if (t.dtype() != kFloat64 || t.is_cuda() || !t.is_contiguous()) {
      return "gradcheck needs contiguous float64 CPU inputs";
    }
    t.impl()->grad = Tensor();
  }
  const Tensor out = f(inputs);
  Generator gen(12345);
  const Tensor weights = randn(out.shape(), kFloat64, &gen);
  const std::vector<double> w = weights.to_vector<double>();
  out.backward(weights);

  std::ostringstream problems;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    if (!x.grad().defined()) {
      problems << "input " << k << " got no gradient; ";
      continue;
    }
    const std::vector<double> analytic = x.grad().to_vector<double>();
    double* data = x.data_ptr<double>();
    NoGradGuard no_grad;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double saved = data[i];
      data[i] = saved + options.eps;
      const double plus = weighted_sum(f(inputs), w);
      data[i] = saved - options.eps;
      const double minus = weighted_sum(f(inputs), w);
      data[i] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      if (std::abs(numeric - analytic[i]) > options.atol + options.rtol * std::abs(numeric) ||
          std::isnan(analytic[i])) {
        problems << "input " << k << " element " << i << ": analytic " << analytic[i] << " numeric "
                 << numeric << "; ";
        break;
      }
    }
  }
  return problems.str();
}

std::string compare(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  if (actual.shape() != expected.shape()) {
    return "shapes differ: " + shape_str(actual.shape()) + " vs " + shape_str(expected.shape());
  }
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> b = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    if (!both_nan && !(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i]))) {
      std::ostringstream out;
      out << "element " << i << ": " << a[i] << " vs expected " << b[i];
      return out.str();
    }
  }
  return "";
}

Tensor random_leaf(const Shape& shape, uint64_t seed, double scale) {
  Generator gen(seed);
  Tensor t = randn(shape, kFloat64, &gen);
  if (scale != 1.0) {
    double* d = t.data_ptr<double>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] *= scale;
  }
  return t.set_requires_grad(true);
}

Tensor random_away_from(const Shape& shape, uint64_t seed, double lo, double hi,
                        const std::vector<double>& kinks, double margin) {
  Generator gen(seed);
  Tensor t = uniform(shape, lo, hi, kFloat64, &gen);
  double* d = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    for (double k : kinks) {
      if (std::abs(d[i] - k) < margin) d[i] = d[i] < k ? k - margin : k + margin;
    }
  }
  return t.set_requires_grad(true);
}

}  // namespace loom::testing
