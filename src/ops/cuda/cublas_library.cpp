// Opens cuBLAS on first use; see cublas_library.h.
#include "loom/ops/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "loom/tensor/error.h"

#define LOOM_CUBLAS_QUOTE(x) #x
#define LOOM_CUBLAS_NAME(x) LOOM_CUBLAS_QUOTE(x)  // after macro expansion: cublasSgemm_v2

namespace loom::cuda {
namespace {

// The soname of the toolkit loom was built with, found as the dynamic loader finds linked
// libraries (the caller's RUNPATH, LD_LIBRARY_PATH, the system's folders), then in the
// toolkit's library folder seen at configure time.
void* open_library() {
  const std::string soname = "libcublas.so." LOOM_CUBLAS_NAME(CUBLAS_VER_MAJOR);
  if (void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string first_reason = dlerror();
  const std::string fallback = std::string(LOOM_CUDA_LIBRARY_DIR) + "/" + soname;
  if (void* handle = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  LOOM_FAIL("cuBLAS: cannot open ", soname, " (", first_reason, ") nor ", fallback, " (", dlerror(),
            "); loom's CUDA matrix products need the CUDA toolkit's cuBLAS");
}

CublasLibrary open_cublas() {
  void* handle = open_library();
  CublasLibrary library;
#define LOOM_CUBLAS_BIND(name, type)                                            \
  library.name = reinterpret_cast<type>(dlsym(handle, LOOM_CUBLAS_NAME(name))); \
  LOOM_CHECK(library.name != nullptr, "cuBLAS: the library has no ", LOOM_CUBLAS_NAME(name));
  LOOM_CUBLAS_FUNCTIONS(LOOM_CUBLAS_BIND)
#undef LOOM_CUBLAS_BIND
  return library;  // the handle stays open for the process's life
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = open_cublas();
  return library;
}

}  // namespace loom::cuda
