// Element types a tensor can hold, their sizes and names, and the macros that turn a runtime
// dtype into a C++ type for templated kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "loom/tensor/bfloat16.h"

namespace loom {

enum class DType : uint8_t { Float32, Float64, Int64, Int32, UInt8, BFloat16 };

constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kInt32 = DType::Int32;
constexpr DType kUInt8 = DType::UInt8;
// bfloat16 (loom::BFloat16): float32's range with 8 significant bits, for mixed precision.
// Ops that accept it compute in float32 and round once per result.
constexpr DType kBFloat16 = DType::BFloat16;

size_t element_size(DType dtype);
const char* dtype_name(DType dtype);  // "float32", ... as PyTorch and safetensors' lower case
bool is_floating(DType dtype);        // float32, float64, bfloat16
std::ostream& operator<<(std::ostream& out, DType dtype);

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};

// is_floating for element types: std::is_floating_point plus BFloat16.
template <typename T>
inline constexpr bool is_floating_type_v =
    std::is_floating_point_v<T> || std::is_same_v<T, BFloat16>;

namespace detail {
[[noreturn]] void throw_unsupported_dtype(const char* op, DType dtype);
}

}  // namespace loom

// LOOM_DISPATCH_FLOATING(dtype, "op", [&] { kernel<scalar_t>(...); }) runs the lambda with
// scalar_t bound to the C++ type of dtype, or throws naming the op and the dtype. The _AND_BF16
// variants add bfloat16 (scalar_t = loom::BFloat16); only ops that compute it in float use them.
#define LOOM_DISPATCH_CASE(enum_value, type, ...) \
  case enum_value: {                              \
    using scalar_t = type;                        \
    return __VA_ARGS__();                         \
  }

#define LOOM_DISPATCH_CASES_FLOATING(...)                        \
  LOOM_DISPATCH_CASE(::loom::DType::Float32, float, __VA_ARGS__) \
  LOOM_DISPATCH_CASE(::loom::DType::Float64, double, __VA_ARGS__)

#define LOOM_DISPATCH_CASES_ALL(...)                             \
  LOOM_DISPATCH_CASES_FLOATING(__VA_ARGS__)                      \
  LOOM_DISPATCH_CASE(::loom::DType::Int64, int64_t, __VA_ARGS__) \
  LOOM_DISPATCH_CASE(::loom::DType::Int32, int32_t, __VA_ARGS__) \
  LOOM_DISPATCH_CASE(::loom::DType::UInt8, uint8_t, __VA_ARGS__)

#define LOOM_DISPATCH_CASE_BF16(...) \
  LOOM_DISPATCH_CASE(::loom::DType::BFloat16, ::loom::BFloat16, __VA_ARGS__)

// One switch over dtype with the given case list; any other dtype throws.
#define LOOM_DISPATCH_SWITCH(dtype, op, cases)                                             \
  [&] {                                                                                    \
    switch (dtype) { cases default : ::loom::detail::throw_unsupported_dtype(op, dtype); } \
  }()

#define LOOM_DISPATCH_FLOATING(dtype, op, ...) \
  LOOM_DISPATCH_SWITCH(dtype, op, LOOM_DISPATCH_CASES_FLOATING(__VA_ARGS__))
#define LOOM_DISPATCH_FLOATING_AND_BF16(dtype, op, ...) \
  LOOM_DISPATCH_SWITCH(                                 \
      dtype, op, LOOM_DISPATCH_CASES_FLOATING(__VA_ARGS__) LOOM_DISPATCH_CASE_BF16(__VA_ARGS__))
#define LOOM_DISPATCH_ALL(dtype, op, ...) \
  LOOM_DISPATCH_SWITCH(dtype, op, LOOM_DISPATCH_CASES_ALL(__VA_ARGS__))
#define LOOM_DISPATCH_ALL_AND_BF16(dtype, op, ...) \
  LOOM_DISPATCH_SWITCH(dtype, op,                  \
                       LOOM_DISPATCH_CASES_ALL(__VA_ARGS__) LOOM_DISPATCH_CASE_BF16(__VA_ARGS__))
