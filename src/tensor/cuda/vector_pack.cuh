// Internal: V elements of T in one aligned load or store, for kernels over dense data that read
// 16 bytes a thread (8 bfloat16, 4 float, 2 double): the width at which a bfloat16 pass gets near
// the memory's bandwidth, where 2-byte accesses reach a third of it.
#pragma once

#include <cstdint>

namespace loom::detail {

template <int V, typename T>
struct alignas(sizeof(T) * V) Chunk {
  static constexpr int kSize = V;
  T v[V];
};

template <typename T>
using Pack16 = Chunk<16 / sizeof(T), T>;

// Whether p may be read as Chunk<V, T>s.
template <typename T>
inline bool aligned_to(const T* p, int v) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * v) == 0;
}

}  // namespace loom::detail
