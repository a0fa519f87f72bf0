// Element types a tensor can hold, their sizes and names, and the macros that turn a runtime
// dtype into a C++ type for templated kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {

enum class DType : uint8_t { Float32, Float64, Int64, Int32, UInt8 };

constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kInt32 = DType::Int32;
constexpr DType kUInt8 = DType::UInt8;

size_t element_size(DType dtype);
const char* dtype_name(DType dtype);  // "float32", ... as PyTorch and safetensors' lower case
bool is_floating(DType dtype);
std::ostream& operator<<(std::ostream& out, DType dtype);

template <typename T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };

namespace detail {
[[noreturn]] void throw_unsupported_dtype(const char* op, DType dtype);
}

}  // namespace loom

// LOOM_DISPATCH_FLOATING(dtype, "op", [&] { kernel<scalar_t>(...); }) runs the lambda with
// scalar_t bound to the C++ type of dtype, or throws naming the op and the dtype.
#define LOOM_DISPATCH_CASE(enum_value, type, ...) \
  case enum_value: {                              \
    using scalar_t = type;                        \
    return __VA_ARGS__();                         \
  }

#define LOOM_DISPATCH_FLOATING(dtype, op, ...)                              \
  [&] {                                                                     \
    switch (dtype) {                                                        \
      LOOM_DISPATCH_CASE(::loom::DType::Float32, float, __VA_ARGS__)        \
      LOOM_DISPATCH_CASE(::loom::DType::Float64, double, __VA_ARGS__)       \
      default: ::loom::detail::throw_unsupported_dtype(op, dtype);          \
    }                                                                       \
  }()

#define LOOM_DISPATCH_ALL(dtype, op, ...)                                   \
  [&] {                                                                     \
    switch (dtype) {                                                        \
      LOOM_DISPATCH_CASE(::loom::DType::Float32, float, __VA_ARGS__)        \
      LOOM_DISPATCH_CASE(::loom::DType::Float64, double, __VA_ARGS__)       \
      LOOM_DISPATCH_CASE(::loom::DType::Int64, int64_t, __VA_ARGS__)        \
      LOOM_DISPATCH_CASE(::loom::DType::Int32, int32_t, __VA_ARGS__)        \
      LOOM_DISPATCH_CASE(::loom::DType::UInt8, uint8_t, __VA_ARGS__)        \
      default: ::loom::detail::throw_unsupported_dtype(op, dtype);          \
    }                                                                       \
  }()
