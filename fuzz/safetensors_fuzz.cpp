// libFuzzer target for the safetensors reader (loom's model files and checkpoints): any bytes
// must give a TensorFile or a loom::Error, never a crash, a hang, an overflow or a sanitizer
// report. Seed corpus: tests/io/fuzz_corpus_test.cpp writes it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/io/model_file.h"
#include "loom/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const loom::io::TensorFile file = loom::io::parse_safetensors(bytes, "fuzz");
    // A file that parses goes on to the model-file checks of its metadata.
    const auto it = file.metadata.find("loom.preprocessing");
    if (it != file.metadata.end()) loom::io::Preprocessing::from_json(it->second, "fuzz");
  } catch (const loom::Error&) {
  }
  return 0;
}
