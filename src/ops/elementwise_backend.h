// Internal: the elementwise family's backend: the op enum (one entry per functor of
// elementwise_math.h), run_elementwise (defined in elementwise.cpp, the one place an elementwise op
// checks devices and shapes, allocates and picks a device), the two backends' entry points
// (cpu/elementwise.cpp, cuda/elementwise.cu) and what they share: picking the functor for an op and
// dtype (visit_elementwise) and binding tensors to operands, dense or broadcast/strided
// (bind_operands). A backend supplies only its loop: run(f, out, n, operands...) must compute
// out[i] = f(operands[i]...) for i in [0, n).
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "loom/ops/elementwise_math.h"
#include "loom/tensor/strided_index.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

#define LOOM_ELEMENTWISE_ENUM_ENTRY(functor, dtypes) functor,
enum class ElementwiseOp { LOOM_ELEMENTWISE_OPS(LOOM_ELEMENTWISE_ENUM_ENTRY) };
#undef LOOM_ELEMENTWISE_ENUM_ENTRY

// Runs `op` over `inputs` broadcast together (NumPy rules) into a new tensor of `out_dtype` on
// the inputs' common device, contiguous or, when the first dense input of the output's shape is
// channels-last, channels-last. `name` is the public op's name for error messages.
// The functor's element type is taken from the last input (the value operand for every op).
// Dtype rules are the caller's to check; devices and shapes are checked here.
Tensor run_elementwise(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                       DType out_dtype, const OpParams& params = {});

// run_elementwise for maths: every input must share the first one's dtype, float32, float64 or
// bfloat16 (computed in float32), and the output has that dtype too.
Tensor run_floating(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                    const OpParams& params = {});

// The backends: `out` is contiguous with the broadcast shape and at least one element.
void cpu_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                     const std::vector<Tensor>& inputs, const OpParams& params);
void cuda_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                      const std::vector<Tensor>& inputs, const OpParams& params);

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
#define LOOM_ELEMENTWISE_CASE(functor, dtypes) \
  case ElementwiseOp::functor:                 \
    return on_##dtypes<functor>(dtype, name, p, v);
  switch (op) { LOOM_ELEMENTWISE_OPS(LOOM_ELEMENTWISE_CASE) }
#undef LOOM_ELEMENTWISE_CASE
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
