// Protobuf's wire format: each field is a varint key (field << 3 | wire type) and its value.
#include "loom/io/protobuf_writer.h"

#include <cstring>

#include "loom/tensor/error.h"

namespace loom::io {

void ProtoWriter::append_varint(std::string& out, uint64_t value) {
  // Seven bits a byte, least significant first; the high bit says another byte follows.
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void ProtoWriter::tag(int field, int wire_type) {
  LOOM_ASSERT(field >= 1 && field < (1 << 29), "protobuf field number ", field);
  append_varint(out_, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

ProtoWriter& ProtoWriter::varint(int field, int64_t value) {
  tag(field, 0);
  append_varint(out_, static_cast<uint64_t>(value));
  return *this;
}

ProtoWriter& ProtoWriter::fixed_float(int field, float value) {
  tag(field, 5);
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  return *this;
}

ProtoWriter& ProtoWriter::bytes(int field, const void* data, size_t size) {
  tag(field, 2);
  append_varint(out_, size);
  out_.append(static_cast<const char*>(data), size);
  return *this;
}

ProtoWriter& ProtoWriter::bytes(int field, const std::string& value) {
  return bytes(field, value.data(), value.size());
}

ProtoWriter& ProtoWriter::varints(int field, const std::vector<int64_t>& values) {
  for (int64_t v : values) varint(field, v);
  return *this;
}

}  // namespace loom::io
