// The method forms of Tensor (x.abs(), x.sum(1), x.softmax(-1), ...), each one call of the free
// function of ops/ that does the work. They live in ops/, as Tensor::expand does, because
// tensor/ includes nothing of ops/; tensor.h declares them.
#include "loom/ops/activation.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/linalg.h"
#include "loom/ops/reduction.h"
#include "loom/ops/softmax.h"

namespace loom {

// Inside a member function an unqualified abs(...) would name the member itself, so every
// call below says loom::.
Tensor Tensor::abs() const { return loom::abs(*this); }
Tensor Tensor::neg() const { return loom::neg(*this); }
Tensor Tensor::exp() const { return loom::exp(*this); }
Tensor Tensor::log() const { return loom::log(*this); }
Tensor Tensor::sqrt() const { return loom::sqrt(*this); }
Tensor Tensor::relu() const { return loom::relu(*this); }
Tensor Tensor::sigmoid() const { return loom::sigmoid(*this); }
Tensor Tensor::tanh() const { return loom::tanh(*this); }
Tensor Tensor::pow(double exponent) const { return loom::pow(*this, exponent); }
Tensor Tensor::pow(const Tensor& exponent) const { return loom::pow(*this, exponent); }
Tensor Tensor::clamp(double min, double max) const { return loom::clamp(*this, min, max); }

Tensor Tensor::add(const Tensor& other) const { return loom::add(*this, other); }
Tensor Tensor::add(double other) const { return loom::add(*this, other); }
Tensor Tensor::sub(const Tensor& other) const { return loom::sub(*this, other); }
Tensor Tensor::sub(double other) const { return loom::sub(*this, other); }
Tensor Tensor::mul(const Tensor& other) const { return loom::mul(*this, other); }
Tensor Tensor::mul(double other) const { return loom::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return loom::div(*this, other); }
Tensor Tensor::div(double other) const { return loom::div(*this, other); }
Tensor Tensor::maximum(const Tensor& other) const { return loom::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return loom::minimum(*this, other); }

Tensor Tensor::eq(const Tensor& other) const { return loom::eq(*this, other); }
Tensor Tensor::eq(double other) const { return loom::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return loom::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return loom::lt(*this, other); }
Tensor Tensor::lt(double other) const { return loom::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return loom::le(*this, other); }
Tensor Tensor::le(double other) const { return loom::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return loom::gt(*this, other); }
Tensor Tensor::gt(double other) const { return loom::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return loom::ge(*this, other); }
Tensor Tensor::ge(double other) const { return loom::ge(*this, other); }

Tensor Tensor::sum() const { return loom::sum(*this); }
Tensor Tensor::sum(int64_t dim, bool keepdim) const { return loom::sum(*this, {dim}, keepdim); }
Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return loom::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return loom::mean(*this); }
Tensor Tensor::mean(int64_t dim, bool keepdim) const { return loom::mean(*this, {dim}, keepdim); }
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return loom::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const { return loom::max(*this); }
Tensor Tensor::min() const { return loom::min(*this); }
Tensor Tensor::amax(int64_t dim, bool keepdim) const { return loom::max(*this, dim, keepdim); }
Tensor Tensor::amin(int64_t dim, bool keepdim) const { return loom::min(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return {loom::max(*this, dim, keepdim), loom::argmax(*this, dim, keepdim)};
}
Tensor Tensor::argmax() const { return loom::argmax(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return loom::argmax(*this, dim, keepdim); }

Tensor Tensor::matmul(const Tensor& other) const { return loom::matmul(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return loom::bmm(*this, other); }
Tensor Tensor::softmax(int64_t dim) const { return loom::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return loom::log_softmax(*this, dim); }

}  // namespace loom
