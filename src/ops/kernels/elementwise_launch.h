// What the CPU and CUDA elementwise backends share: picking the functor for an op and dtype
// (visit_elementwise), and binding tensors to operands, dense or broadcast/strided
// (bind_operands). A backend supplies only its loop: run(f, out, n, operands...) must compute
// out[i] = f(operands[i]...) for i in [0, n).
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "ops/kernels/elementwise_kernels.h"
#include "tensor/strided_index.h"

namespace loom::detail {

// An input laid out exactly like the output: element i is data[i].
template <typename T>
struct DenseOperand {
  const T* data;
  LOOM_HOST_DEVICE T operator[](int64_t i) const { return data[i]; }
};

// A broadcast or non-contiguous input: element i of the output reads data[ix(i)].
template <typename T>
struct StridedOperand {
  const T* data;  // the storage's base; the indexer adds the tensor's offset
  StridedIndexer ix;
  LOOM_HOST_DEVICE T operator[](int64_t i) const { return data[ix(i)]; }
};

template <typename Out, typename... In>
constexpr size_t arity(Sig<Out, In...>) {
  return sizeof...(In);
}

template <typename F, typename Out, typename... In, size_t... I, typename Run>
void bind_operands_impl(const F& f, Sig<Out, In...>, std::index_sequence<I...>, const char* name,
                        const Tensor& out, const std::vector<Tensor>& inputs, Run& run) {
  LOOM_ASSERT(inputs.size() == sizeof...(In), "elementwise op got the wrong number of inputs");
  LOOM_ASSERT(out.is_contiguous());
  Out* out_data = out.data_ptr<Out>();
  const int64_t n = out.numel();
  // The fast path needs every input to match the output's shape and layout exactly.
  const bool dense = ((inputs[I].is_contiguous() && inputs[I].shape() == out.shape()) && ...);
  if (dense) {
    run(f, out_data, n, DenseOperand<In>{inputs[I].template data_ptr<In>()}...);
  } else {
    run(f, out_data, n,
        StridedOperand<In>{inputs[I].template data_ptr<In>() - inputs[I].offset(),
                           make_indexer(inputs[I], out.shape(), name)}...);
  }
}

template <typename F, typename Run>
void bind_operands(const F& f, const char* name, const Tensor& out,
                   const std::vector<Tensor>& inputs, Run& run) {
  using signature = typename F::signature;
  bind_operands_impl(f, signature{}, std::make_index_sequence<arity(signature{})>{}, name, out,
                     inputs, run);
}

// bfloat16 operands run an op's float32 functor: every input widened to float (exactly), the
// result rounded to bfloat16 once (uint8 results and conditions pass through as they are).
template <typename T>
using bf16_for_t = std::conditional_t<std::is_same_v<T, float>, BFloat16, T>;

template <typename F, typename Signature = typename F::signature>
struct ComputeInFloat;

template <typename F, typename Out, typename... In>
struct ComputeInFloat<F, Sig<Out, In...>> {
  using signature = Sig<bf16_for_t<Out>, bf16_for_t<In>...>;
  F f;
  LOOM_HOST_DEVICE bf16_for_t<Out> operator()(bf16_for_t<In>... x) const {
    return static_cast<bf16_for_t<Out>>(f(static_cast<In>(x)...));
  }
};

// The functor of op F for element type T.
template <template <typename> class F, typename T>
auto functor_for(const OpParams& p) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return ComputeInFloat<F<float>>{make_functor<F<float>>(p)};
  } else {
    return make_functor<F<T>>(p);
  }
}

// Calls visit(functor) with the functor of `op` for element type `dtype`; math ops accept
// float32, float64 and bfloat16, comparisons and where every dtype.
template <template <typename> class F, typename Visitor>
void on_floating(DType dtype, const char* name, const OpParams& p, Visitor& visit) {
  LOOM_DISPATCH_FLOATING_AND_BF16(dtype, name, [&] { visit(functor_for<F, scalar_t>(p)); });
}

template <template <typename> class F, typename Visitor>
void on_all(DType dtype, const char* name, const OpParams& p, Visitor& visit) {
  LOOM_DISPATCH_ALL_AND_BF16(dtype, name, [&] { visit(functor_for<F, scalar_t>(p)); });
}

template <typename Visitor>
void visit_elementwise(ElementwiseOp op, DType dtype, const char* name, const OpParams& p,
                       Visitor& v) {
  using Op = ElementwiseOp;
  // clang-format off
  switch (op) {
    case Op::Neg: return on_floating<Neg>(dtype, name, p, v);
    case Op::Exp: return on_floating<Exp>(dtype, name, p, v);
    case Op::Log: return on_floating<Log>(dtype, name, p, v);
    case Op::Sqrt: return on_floating<Sqrt>(dtype, name, p, v);
    case Op::Abs: return on_floating<Abs>(dtype, name, p, v);
    case Op::Relu: return on_floating<Relu>(dtype, name, p, v);
    case Op::LeakyRelu: return on_floating<LeakyRelu>(dtype, name, p, v);
    case Op::Sigmoid: return on_floating<Sigmoid>(dtype, name, p, v);
    case Op::Tanh: return on_floating<Tanh>(dtype, name, p, v);
    case Op::Clamp: return on_floating<Clamp>(dtype, name, p, v);
    case Op::PowScalar: return on_floating<PowScalar>(dtype, name, p, v);
    case Op::AddScalar: return on_floating<AddScalar>(dtype, name, p, v);
    case Op::MulScalar: return on_floating<MulScalar>(dtype, name, p, v);
    case Op::DivScalar: return on_floating<DivScalar>(dtype, name, p, v);
    case Op::RDivScalar: return on_floating<RDivScalar>(dtype, name, p, v);
    case Op::EqScalar: return on_all<EqScalar>(dtype, name, p, v);
    case Op::LtScalar: return on_all<LtScalar>(dtype, name, p, v);
    case Op::LeScalar: return on_all<LeScalar>(dtype, name, p, v);
    case Op::GtScalar: return on_all<GtScalar>(dtype, name, p, v);
    case Op::GeScalar: return on_all<GeScalar>(dtype, name, p, v);
    case Op::Add: return on_floating<Add>(dtype, name, p, v);
    case Op::Sub: return on_floating<Sub>(dtype, name, p, v);
    case Op::Mul: return on_floating<Mul>(dtype, name, p, v);
    case Op::Div: return on_floating<Div>(dtype, name, p, v);
    case Op::Maximum: return on_floating<Maximum>(dtype, name, p, v);
    case Op::Minimum: return on_floating<Minimum>(dtype, name, p, v);
    case Op::Pow: return on_floating<Pow>(dtype, name, p, v);
    case Op::BceWithLogits: return on_floating<BceWithLogits>(dtype, name, p, v);
    case Op::Eq: return on_all<Eq>(dtype, name, p, v);
    case Op::Ne: return on_all<Ne>(dtype, name, p, v);
    case Op::Lt: return on_all<Lt>(dtype, name, p, v);
    case Op::Le: return on_all<Le>(dtype, name, p, v);
    case Op::Gt: return on_all<Gt>(dtype, name, p, v);
    case Op::Ge: return on_all<Ge>(dtype, name, p, v);
    case Op::Where: return on_all<Where>(dtype, name, p, v);
    case Op::ReluBackward: return on_floating<ReluBackward>(dtype, name, p, v);
    case Op::LeakyReluBackward: return on_floating<LeakyReluBackward>(dtype, name, p, v);
    case Op::SigmoidBackward: return on_floating<SigmoidBackward>(dtype, name, p, v);
    case Op::TanhBackward: return on_floating<TanhBackward>(dtype, name, p, v);
    case Op::AbsBackward: return on_floating<AbsBackward>(dtype, name, p, v);
    case Op::ClampBackward: return on_floating<ClampBackward>(dtype, name, p, v);
    case Op::MaximumBackward: return on_floating<MaximumBackward>(dtype, name, p, v);
    case Op::MinimumBackward: return on_floating<MinimumBackward>(dtype, name, p, v);
    case Op::BceWithLogitsBackward: return on_floating<BceWithLogitsBackward>(dtype, name, p, v);
  }
  // clang-format on
  LOOM_ASSERT(false, "visit_elementwise: unknown op ", static_cast<int>(op));
}

// The whole backend entry point but for the loop: functor for (op, dtype of the last input),
// operands bound, run(f, out, n, operands...) called once.
template <typename Run>
void launch_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                        const std::vector<Tensor>& inputs, const OpParams& p, Run run) {
  auto visit = [&](const auto& f) { bind_operands(f, name, out, inputs, run); };
  visit_elementwise(op, inputs.back().dtype(), name, p, visit);
}

}  // namespace loom::detail
