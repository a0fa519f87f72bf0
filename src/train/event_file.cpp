// EventFileWriter: hand-encoded tensorflow.Event records in TFRecord framing. Field numbers are
// those of tensorflow/core/util/event.proto and framework/summary.proto, tensor.proto.
#include "loom/train/event_file.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "loom/tensor/error.h"

namespace loom::train {

namespace {

// Table of the reflected CRC-32C of each byte value.
const std::array<uint32_t, 256>& crc32c_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// --- protobuf wire format: key = field << 3 | wire type ------------------------------------
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {  // 7 bits a byte, low first, high bit = "more"
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, uint32_t field, Wire wire) { put_varint(out, (field << 3) | wire); }

void put_little_endian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_varint_field(std::string& out, uint32_t field, uint64_t v) {
  put_key(out, field, kVarint);
  put_varint(out, v);
}

void put_bytes_field(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

void put_double_field(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed64);
  put_little_endian(out, bits, 8);
}

void put_float_field(std::string& out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed32);
  put_little_endian(out, bits, 4);
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
std::string event_header(double wall_time, int64_t step) {
  std::string event;
  put_double_field(event, 1, wall_time);
  if (step != 0)
    put_varint_field(event, 2, static_cast<uint64_t>(step));  // proto3: 0 is the default
  return event;
}

// An Event holding a Summary (value = 1) of one Summary.Value.
std::string summary_event(double wall_time, int64_t step, const std::string& value) {
  std::string summary;
  put_bytes_field(summary, 1, value);
  std::string event = event_header(wall_time, step);
  put_bytes_field(event, 5, summary);
  return event;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::atomic<int> writers_in_process{0};

}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  const auto& table = crc32c_table();
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventFileWriter::EventFileWriter(const std::string& dir) : file_(nullptr, &std::fclose) {
  namespace fs = std::filesystem;
  LOOM_CHECK(!dir.empty(), "TensorBoard: the log folder is empty");
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  LOOM_CHECK(fs::exists(status), "TensorBoard: the log folder ", dir, " does not exist");
  LOOM_CHECK(fs::is_directory(status), "TensorBoard: the log folder ", dir, " is not a folder");
  const double now = wall_time_now();
  path_ = (fs::path(dir) /
           ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + host_name() +
            "." + std::to_string(::getpid()) + "." + std::to_string(writers_in_process++)))
              .string();
  file_.reset(std::fopen(path_.c_str(), "wbx"));  // x: never append to another writer's file
  LOOM_CHECK(file_ != nullptr, "TensorBoard: cannot create the event file ", path_, ": ",
             std::strerror(errno));
  std::string event = event_header(now, 0);
  put_bytes_field(event, 3, "brain.Event:2");
  write_record(event);
  flush();
}

void EventFileWriter::write_record(const std::string& data) {
  std::string record;
  put_little_endian(record, data.size(), 8);
  put_little_endian(record, masked_crc32c(record.data(), 8), 4);
  record += data;
  put_little_endian(record, masked_crc32c(data.data(), data.size()), 4);
  LOOM_CHECK(std::fwrite(record.data(), 1, record.size(), file_.get()) == record.size(),
             "TensorBoard: cannot write ", path_, ": ", std::strerror(errno));
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                 double wall_time) {
  // Summary.Value: tag = 1, simple_value = 2 (float).
  std::string v;
  put_bytes_field(v, 1, tag);
  put_float_field(v, 2, static_cast<float>(value));
  write_record(summary_event(wall_time, step, v));
}

void EventFileWriter::add_text(const std::string& tag, const std::string& text, int64_t step,
                               double wall_time) {
  // SummaryMetadata.plugin_data = 1 -> PluginData.plugin_name = 1 (its content, a TextPluginData
  // of version 0, encodes to no bytes).
  std::string plugin_data;
  put_bytes_field(plugin_data, 1, "text");
  std::string metadata;
  put_bytes_field(metadata, 1, plugin_data);
  // TensorProto: dtype = 1 (DT_STRING = 7), tensor_shape = 2 (no dims: a scalar), string_val = 8.
  std::string tensor;
  put_varint_field(tensor, 1, 7);
  put_bytes_field(tensor, 2, "");
  put_bytes_field(tensor, 8, text);
  // Summary.Value: tag = 1, tensor = 8, metadata = 9.
  std::string v;
  put_bytes_field(v, 1, tag);
  put_bytes_field(v, 9, metadata);
  put_bytes_field(v, 8, tensor);
  write_record(summary_event(wall_time, step, v));
}

void EventFileWriter::flush() {
  LOOM_CHECK(std::fflush(file_.get()) == 0, "TensorBoard: cannot write ", path_, ": ",
             std::strerror(errno));
}

}  // namespace loom::train
