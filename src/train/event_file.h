// TensorBoard's event files without protobuf: the few fields of tensorflow.Event and Summary
// encoded by hand (varints, fixed64/fixed32, length-delimited), framed as TFRecords whose
// length and data each carry a masked CRC-32C.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace loom::train {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF);
// crc32c("123456789") = 0xE3069283. `crc` continues a previous result over more bytes.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
// TFRecord's mask: ((crc >> 15) | (crc << 17)) + 0xA282EAD8, as uint32.
uint32_t masked_crc32c(const void* data, size_t size);

// Appends one Event record to a new file <dir>/events.out.tfevents.<unix s>.<host>.<pid>.<n>
// (n counts the writers of this process). A TFRecord is
//   uint64 length | uint32 masked_crc(length) | data[length] | uint32 masked_crc(data),
// integers little-endian. The first record is Event{wall_time, file_version: "brain.Event:2"}.
class EventFileWriter {
 public:
  // Throws loom::Error naming the path when `dir` is not an existing folder or the file cannot
  // be created there.
  explicit EventFileWriter(const std::string& dir);

  const std::string& path() const { return path_; }
  // Event{wall_time, step, summary: {value: {tag, simple_value: float(value)}}}.
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);
  // Event{wall_time, step, summary: {value: {tag, metadata: {plugin_data: {plugin_name: "text"}},
  // tensor: {dtype: DT_STRING, tensor_shape: {} (a scalar), string_val: text}}}}.
  void add_text(const std::string& tag, const std::string& text, int64_t step, double wall_time);
  // Hands the records written so far to the OS, so a reader sees them while training runs.
  void flush();

 private:
  void write_record(const std::string& data);
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

// Seconds since the Unix epoch, as Event.wall_time.
double wall_time_now();

}  // namespace loom::train
