// The few pieces of protobuf's wire format that writing an ONNX file needs: varints, 32-bit
// floats and length-delimited fields (strings, bytes, nested messages, packed repeated
// integers). Hand-written instead of protoc-generated code so loom needs no protobuf library and
// no onnx.proto at build time: ONNX export is ~40 lines of encoding (docs/onnx.md says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::io {

// Appends fields to a byte string in the order they are added. A nested message is written
// into its own ProtoWriter first and added with message(), which prefixes its length.
class ProtoWriter {
 public:
  // Wire type 0: int32, int64, uint64, bool and enum fields (negative values as 10 bytes, as
  // protobuf encodes int64).
  ProtoWriter& varint(int field, int64_t value);
  // Wire type 5: a float field.
  ProtoWriter& fixed_float(int field, float value);
  // Wire type 2: a string or bytes field.
  ProtoWriter& bytes(int field, const std::string& value);
  ProtoWriter& bytes(int field, const void* data, size_t size);
  ProtoWriter& message(int field, const ProtoWriter& nested) { return bytes(field, nested.out_); }
  // A repeated int64 field as one varint field per value: onnx.proto is proto2, whose repeated
  // scalars are unpacked unless marked (parsers take either form).
  ProtoWriter& varints(int field, const std::vector<int64_t>& values);

  const std::string& str() const { return out_; }

  // The varint encoding of `value` appended to `out` (exposed for tests and decoders).
  static void append_varint(std::string& out, uint64_t value);

 private:
  void tag(int field, int wire_type);
  std::string out_;
};

}  // namespace loom::io
