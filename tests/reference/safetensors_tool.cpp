// A tiny driver for the Python interop check: `write PATH` saves known tensors with loom;
// `dump PATH` prints every tensor of a file as JSON lines (name, dtype, shape, values).
#include <loom/loom.h>

#include <cstdio>
#include <string>

#include "loom/io/safetensors.h"

int main(int argc, char** argv) try {
  if (argc != 3) throw loom::Error("usage: safetensors_tool write|dump PATH");
  const std::string mode = argv[1], path = argv[2];
  if (mode == "write") {
    loom::Generator gen(2026);
    loom::io::save_safetensors(path,
                               {{"conv.weight", loom::randn({2, 3, 3, 3}, loom::kFloat32, &gen)},
                                {"bias", loom::randn({7}, loom::kFloat64, &gen)},
                                {"steps", loom::randint(0, 1 << 30, {3}, loom::kInt64, &gen)},
                                {"labels", loom::randint(-5, 5, {4}, loom::kInt32, &gen)},
                                {"pixels", loom::randint(0, 256, {2, 2, 3}, loom::kUInt8, &gen)}},
                               {{"format", "loom"}, {"spec", "{\"model\": \"test\"}"}});
    return 0;
  }
  if (mode != "dump") throw loom::Error("unknown mode " + mode);
  const loom::io::TensorFile file = loom::io::load_safetensors(path);
  for (const auto& [name, t] : file.tensors) {
    std::printf("{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", name.c_str(),
                loom::dtype_name(t.dtype()));
    for (int64_t d = 0; d < t.dim(); ++d)
      std::printf("%s%lld", d ? ", " : "", static_cast<long long>(t.size(d)));
    std::printf("], \"values\": [");
    const auto values = t.to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i) std::printf("%s%.17g", i ? ", " : "", values[i]);
    std::printf("]}\n");
  }
  for (const auto& [key, value] : file.metadata)
    std::printf("{\"metadata\": \"%s\"}\n", key.c_str());
  return 0;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "safetensors_tool: %s\n", e.what());
  return 2;
}
