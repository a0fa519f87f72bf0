#include "loom/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "loom/io/atomic_file.h"
#include "loom/nn/untrusted_json.h"

namespace loom::io {

namespace {

static_assert(sizeof(void*) == 8, "loom's file formats assume a 64-bit host");

const char* format_dtype(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return "F32";
    case kFloat64:
      return "F64";
    case kInt64:
      return "I64";
    case kInt32:
      return "I32";
    case kUInt8:
      return "U8";
    case kBFloat16:
      return "BF16";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* dtype) {
  static const std::pair<const char*, DType> table[] = {{"F32", kFloat32}, {"F64", kFloat64},
                                                        {"I64", kInt64},   {"I32", kInt32},
                                                        {"U8", kUInt8},    {"BF16", kBFloat16}};
  for (const auto& [name, value] : table) {
    if (s == name) {
      *dtype = value;
      return true;
    }
  }
  return false;
}

bool host_is_little_endian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

const Tensor& TensorFile::at(const std::string& name) const {
  if (tensors.contains(name)) return tensors.at(name);
  LOOM_FAIL("tensor file has no tensor named \"", nn::excerpt(name), "\"");
}

SafetensorsSnapshot::SafetensorsSnapshot(const NamedTensors& tensors, const Metadata& metadata,
                                         bool copy) {
  LOOM_CHECK(host_is_little_endian(), "safetensors: only little-endian hosts are supported");
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    LOOM_CHECK(!name.empty() && name != "__metadata__", "safetensors: invalid tensor name \"", name,
               "\"");
    LOOM_CHECK(tensor.defined(), "safetensors: tensor \"", name, "\" is undefined");
    Tensor t = tensor.detach();
    if (!t.is_contiguous()) {
      t = t.contiguous();  // a copy already
    } else if (copy) {
      t = t.clone();  // contiguous() would be the tensor itself, which training goes on changing
    }
    const uint64_t bytes = t.nbytes();
    header[name] = {{"dtype", format_dtype(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    sources_.push_back(std::move(t));
  }
  for (const Tensor& t : sources_) {  // after every copy: each device's stream orders its own
    const int device = t.device().index;
    if (!t.is_cuda() || ready_.count(device)) continue;
    auto event = std::make_shared<cuda::Event>(device, /*timing=*/false);
    event->record(cuda::current_stream(device));
    ready_[device] = std::move(event);
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // aligns the data section, as Python's writer does
  const uint64_t n = json.size();
  head_.assign(8, '\0');
  std::memcpy(head_.data(), &n, 8);
  head_ += json;
  size_ = head_.size() + offset;
}

namespace {

// The streams a snapshot's write reads the device copies on: one per device, made when first
// needed, waiting for that device's copies.
class ReadStreams {
 public:
  explicit ReadStreams(const std::map<int, std::shared_ptr<const cuda::Event>>& ready)
      : ready_(ready) {}
  ~ReadStreams() {
    for (const auto& [device, stream] : streams_) cuda::destroy_stream(device, stream);
  }
  ReadStreams(const ReadStreams&) = delete;
  ReadStreams& operator=(const ReadStreams&) = delete;
  cuda::StreamHandle on(int device) {
    auto it = streams_.find(device);
    if (it != streams_.end()) return it->second;
    const cuda::StreamHandle stream = cuda::create_stream(device);
    streams_[device] = stream;
    ready_.at(device)->wait(stream);
    return stream;
  }

 private:
  const std::map<int, std::shared_ptr<const cuda::Event>>& ready_;
  std::map<int, cuda::StreamHandle> streams_;
};

}  // namespace

void SafetensorsSnapshot::write(const ByteSink& sink) const {
  sink(head_.data(), head_.size());
  ReadStreams streams(ready_);
  for (const Tensor& t : sources_) {
    if (t.nbytes() == 0) continue;
    if (!t.is_cuda()) {
      sink(t.raw_data(), t.nbytes());
      continue;
    }
    const int device = t.device().index;
    cuda::StreamGuard on_own_stream(device, streams.on(device));
    const Tensor host = t.cpu();  // pageable: returns once the bytes are here
    sink(host.raw_data(), host.nbytes());
  }
}

std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  const SafetensorsSnapshot snapshot(tensors, metadata, /*copy=*/false);
  std::string out;
  out.reserve(snapshot.size());
  snapshot.write(
      [&out](const void* data, size_t size) { out.append(static_cast<const char*>(data), size); });
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  const std::string bytes = serialize_safetensors(tensors, metadata);
  write_file_atomically(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

TensorFile parse_safetensors(const std::string& bytes, const std::string& name, Device device) {
  LOOM_CHECK(host_is_little_endian(), "safetensors: only little-endian hosts are supported");
  LOOM_CHECK(bytes.size() >= 8, name, ": not a safetensors file (", bytes.size(),
             " bytes, too short for a header)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  LOOM_CHECK(header_len <= bytes.size() - 8, name,
             ": not a safetensors file or truncated (header length ", header_len, ", file size ",
             bytes.size(), ")");
  LOOM_CHECK(header_len <= kMaxHeaderBytes, name, ": the safetensors header length ", header_len,
             " is more than the ", kMaxHeaderBytes, " bytes loom reads");
  // Depth-limited and without repeated keys: a name given twice would otherwise silently
  // take its last entry, and error messages dump parts of the header.
  const nlohmann::json header = nn::parse_untrusted_json(
      std::string_view(bytes).substr(8, header_len), name + ": the safetensors header");
  LOOM_CHECK(header.is_object(), name, ": the safetensors header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - header_len;

  TensorFile file;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& value = it.value();
    if (key == "__metadata__") {
      LOOM_CHECK(value.is_object(), name, ": __metadata__ must be an object of strings");
      for (auto m = value.begin(); m != value.end(); ++m) {
        LOOM_CHECK(m.value().is_string(), name, ": __metadata__ value of \"", nn::excerpt(m.key()),
                   "\" is not a string");
        file.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = name + ": tensor \"" + nn::excerpt(key) + "\"";
    LOOM_CHECK(value.is_object() && value.contains("dtype") && value.contains("shape") &&
                   value.contains("data_offsets"),
               where, " needs dtype, shape and data_offsets");
    Entry e;
    e.name = key;
    LOOM_CHECK(
        value["dtype"].is_string() && parse_dtype(value["dtype"].get<std::string>(), &e.dtype),
        where, " has unsupported dtype ", nn::json_excerpt(value["dtype"]),
        " (loom reads F32, F64, BF16, I64, I32, U8)");
    const auto& shape = value["shape"];
    LOOM_CHECK(shape.is_array() && shape.size() <= 64, where, " has an invalid shape ",
               nn::json_excerpt(shape));
    uint64_t numel = 1;
    for (const auto& s : shape) {
      // Each size must fit Shape's int64_t: [0, 2^64 - 1] has no elements yet a negative size.
      LOOM_CHECK(s.is_number_unsigned() &&
                     s.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
                 where, " has an invalid shape ", nn::json_excerpt(shape));
      const uint64_t size = s.get<uint64_t>();
      LOOM_CHECK(size == 0 || numel <= std::numeric_limits<int64_t>::max() / size, where,
                 " has a shape whose size overflows: ", nn::json_excerpt(shape));
      numel *= size;
      e.shape.push_back(static_cast<int64_t>(size));
    }
    const auto& offsets = value["data_offsets"];
    LOOM_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                   offsets[1].is_number_unsigned(),
               where, " has invalid data_offsets ", nn::json_excerpt(offsets));
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    const uint64_t elem = element_size(e.dtype);
    LOOM_CHECK(numel <= std::numeric_limits<uint64_t>::max() / elem, where, " is too large");
    LOOM_CHECK(e.begin <= e.end && e.end <= data_size, where, " has data_offsets [", e.begin, ", ",
               e.end, ") outside the ", data_size, "-byte data section (truncated file?)");
    LOOM_CHECK(e.end - e.begin == numel * elem, where, " has ", e.end - e.begin,
               " bytes of data but shape ", nn::json_excerpt(shape), " of ", dtype_name(e.dtype),
               " needs ", numel * elem);
    entries.push_back(std::move(e));
  }
  // The ranges must tile the data section exactly: no overlap, no hole, nothing after.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    LOOM_CHECK(e.begin == expected, name, ": tensor \"", nn::excerpt(e.name), "\" ",
               e.begin < expected ? "overlaps the previous tensor" : "leaves a gap before its data",
               " (data_offsets start ", e.begin, ", expected ", expected, ")");
    expected = e.end;
  }
  LOOM_CHECK(expected == data_size, name, ": ", data_size - expected,
             " bytes after the last tensor's data");

  const char* data = bytes.data() + 8 + header_len;
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), data + e.begin, e.end - e.begin);
    file.tensors.insert(e.name, device.is_cpu() ? t : t.to(device));
  }
  return file;
}

TensorFile load_safetensors(const std::string& path, Device device) {
  return parse_safetensors(read_file(path), path, device);
}

}  // namespace loom::io
