#include "loom/tensor/dtype.h"

#include <ostream>

#include "loom/tensor/error.h"

namespace loom {

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
    case DType::Int64:
      return 8;
    case DType::Int32:
      return 4;
    case DType::UInt8:
      return 1;
    case DType::BFloat16:
      return 2;
  }
  LOOM_ASSERT(false, "unknown dtype");
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int64:
      return "int64";
    case DType::Int32:
      return "int32";
    case DType::UInt8:
      return "uint8";
    case DType::BFloat16:
      return "bfloat16";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::BFloat16;
}

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

namespace detail {
void throw_unsupported_dtype(const char* op, DType dtype) {
  LOOM_FAIL(op, ": dtype ", dtype_name(dtype), " is not supported");
}
}  // namespace detail

}  // namespace loom
