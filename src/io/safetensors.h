// The safetensors format (a JSON header and raw little-endian tensors), which Python's
// safetensors, PyTorch and Hugging Face read: loom's model files and checkpoints.
//   [8 bytes: header length N, little-endian u64][N bytes: JSON header][data]
// The header maps each name to {"dtype", "shape", "data_offsets": [begin, end)} relative to
// the data section, plus an optional "__metadata__" object of strings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/io/atomic_file.h"
#include "loom/nn/named_tensors.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/tensor.h"

namespace loom::io {

// The largest header read. Headers of real models are kilobytes (a few hundred tensors, the
// spec); parsed, a header takes up to 16x its size in memory, so Python's 100 MB limit would let
// a crafted file cost loom 1.8 GB and 4 s.
inline constexpr uint64_t kMaxHeaderBytes = 16u << 20;

// The same ordered name -> tensor map as a module's state_dict(), so that a file's tensors go
// straight into load_state_dict().
using NamedTensors = nn::NamedTensors;
using Metadata = std::map<std::string, std::string>;

struct TensorFile {
  NamedTensors tensors;  // in the order of their data in the file
  Metadata metadata;
  const Tensor& at(const std::string& name) const;  // throws naming the missing tensor
};

// Writes atomically (see atomic_file.h). Tensors may live on any device; names must be
// unique and non-empty and must not be "__metadata__".
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

// Reads and validates the whole file before creating any tensor: header length (at most
// kMaxHeaderBytes), JSON (nn/untrusted_json.h: depth-limited, no repeated key), dtypes,
// shapes, that every data range lies inside the file, that ranges neither overlap nor leave
// holes, and that no size arithmetic overflows. Errors name the path and the problem.
TensorFile load_safetensors(const std::string& path, Device device = kCPU);
// The same from bytes in memory; `name` is used in error messages.
TensorFile parse_safetensors(const std::string& bytes, const std::string& name,
                             Device device = kCPU);
// The bytes save_safetensors writes.
std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});

// A safetensors file's contents taken now and written later, perhaps on another thread (fit's
// io::BackgroundWriter, while training goes on). Taking one copies each tensor where it lives,
// so that the in-place updates after it do not reach it: for a CUDA tensor a copy on its
// device's current stream, where bringing it to the host at once held the training thread for
// a synchronous copy to pageable memory (resnet18's checkpoint with AdamW's moments is 134 MB,
// every epoch). write() brings the bytes to the host a tensor at a time, on a stream
// of its own that waits for those copies and for nothing queued after them, so it neither
// waits for the training steps that follow nor delays them.
class SafetensorsSnapshot {
 public:
  // `copy` false keeps the tensors themselves (no copy): for a caller that writes the snapshot
  // before anything can change them (serialize_safetensors).
  SafetensorsSnapshot(const NamedTensors& tensors, const Metadata& metadata, bool copy = true);
  uint64_t size() const { return size_; }  // the file's bytes
  // Hands the file's bytes to `sink`, in order, in pieces no larger than the largest tensor.
  void write(const ByteSink& sink) const;

 private:
  std::string head_;             // the header's length, the JSON header and its padding
  std::vector<Tensor> sources_;  // contiguous, each on its own device, in the file's order
  // One per CUDA device among the sources, recorded on its stream after their copies.
  std::map<int, std::shared_ptr<const cuda::Event>> ready_;
  uint64_t size_ = 0;
};

}  // namespace loom::io
