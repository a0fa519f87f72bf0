// io::export_onnx without onnxruntime: the file's bytes decoded back with a protobuf reader
// written here (independent of protobuf_writer.h) into the graph the model should give, its
// initializers holding the weights' exact bytes; layers with no ONNX export refused naming them.
// onnxruntime running the file is tests/reference/onnx_export.py.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "testing.h"

namespace loom {
namespace {

// One field of a decoded message: a varint, 4 fixed bytes, or length-delimited bytes.
struct PbField {
  int wire = 0;
  uint64_t number = 0;
  std::string bytes;
};
using PbMessage = std::multimap<int, PbField>;

uint64_t pb_read_varint(const std::string& s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    if (at >= s.size() || shift > 63) throw std::runtime_error("truncated varint");
    const auto byte = static_cast<uint8_t>(s[at++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return v;
  }
}

PbMessage pb_decode(const std::string& s) {
  PbMessage m;
  for (size_t at = 0; at < s.size();) {
    const uint64_t key = pb_read_varint(s, at);
    PbField f;
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      f.number = pb_read_varint(s, at);
    } else if (f.wire == 5) {
      if (at + 4 > s.size()) throw std::runtime_error("truncated fixed32");
      f.bytes = s.substr(at, 4);
      at += 4;
    } else if (f.wire == 2) {
      const uint64_t n = pb_read_varint(s, at);
      if (at + n > s.size()) throw std::runtime_error("truncated bytes");
      f.bytes = s.substr(at, n);
      at += n;
    } else {
      throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
    }
    m.emplace(static_cast<int>(key >> 3), f);
  }
  return m;
}

std::vector<PbField> pb_all(const PbMessage& m, int field) {
  std::vector<PbField> out;
  for (auto [it, end] = m.equal_range(field); it != end; ++it) out.push_back(it->second);
  return out;
}
const PbField& pb_one(const PbMessage& m, int field) {
  EXPECT_EQ(m.count(field), 1u) << "field " << field;
  static const PbField none;
  return m.count(field) ? m.find(field)->second : none;
}

// The decoded graph, in onnx.proto's terms.
struct OnnxNodeView {
  std::string op, name;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, PbMessage> attributes;
};
struct OnnxView {
  int64_t ir_version = 0, opset = 0;
  std::vector<OnnxNodeView> nodes;
  std::map<std::string, PbMessage> initializers;
  std::vector<std::string> input_dims, output_dims;  // "N" or the number
  std::string input_name, output_name;
  std::map<std::string, std::string> metadata;
};

std::vector<std::string> onnx_dims(const std::string& value_info, std::string& name) {
  const PbMessage vi = pb_decode(value_info);
  name = pb_one(vi, 1).bytes;
  const PbMessage tensor = pb_decode(pb_one(pb_decode(pb_one(vi, 2).bytes), 1).bytes);
  EXPECT_EQ(pb_one(tensor, 1).number, 1u);  // FLOAT
  std::vector<std::string> dims;
  for (const PbField& d : pb_all(pb_decode(pb_one(tensor, 2).bytes), 1)) {
    const PbMessage dim = pb_decode(d.bytes);
    dims.push_back(dim.count(2) ? dim.find(2)->second.bytes
                                : std::to_string(dim.find(1)->second.number));
  }
  return dims;
}

OnnxView onnx_view(const std::string& bytes) {
  OnnxView v;
  const PbMessage model = pb_decode(bytes);
  v.ir_version = static_cast<int64_t>(pb_one(model, 1).number);
  EXPECT_EQ(pb_one(model, 2).bytes, "loom");
  v.opset = static_cast<int64_t>(pb_one(pb_decode(pb_one(model, 8).bytes), 2).number);
  for (const PbField& e : pb_all(model, 14)) {
    const PbMessage entry = pb_decode(e.bytes);
    v.metadata[pb_one(entry, 1).bytes] = pb_one(entry, 2).bytes;
  }
  const PbMessage graph = pb_decode(pb_one(model, 7).bytes);
  for (const PbField& n : pb_all(graph, 1)) {
    const PbMessage node = pb_decode(n.bytes);
    OnnxNodeView view;
    for (const PbField& f : pb_all(node, 1)) view.inputs.push_back(f.bytes);
    for (const PbField& f : pb_all(node, 2)) view.outputs.push_back(f.bytes);
    view.name = pb_one(node, 3).bytes;
    view.op = pb_one(node, 4).bytes;
    for (const PbField& a : pb_all(node, 5)) {
      const PbMessage attr = pb_decode(a.bytes);
      view.attributes[pb_one(attr, 1).bytes] = attr;
    }
    v.nodes.push_back(view);
  }
  for (const PbField& t : pb_all(graph, 5)) {
    const PbMessage tensor = pb_decode(t.bytes);
    v.initializers[pb_one(tensor, 8).bytes] = tensor;
  }
  v.input_dims = onnx_dims(pb_one(graph, 11).bytes, v.input_name);
  v.output_dims = onnx_dims(pb_one(graph, 12).bytes, v.output_name);
  return v;
}

std::vector<int64_t> attr_ints(const OnnxNodeView& n, const std::string& name) {
  std::vector<int64_t> out;
  for (const PbField& f : pb_all(n.attributes.at(name), 8))
    out.push_back(static_cast<int64_t>(f.number));
  return out;
}

TEST(OnnxExport, SeedCnnDecodesToItsGraphAndWeights) {
  Generator gen(1);
  auto model = nn::seed_cnn(nn::Init::PyTorch, &gen);
  const OnnxView v = onnx_view(io::onnx_model_bytes(*model, {3, 64, 64}));
  EXPECT_EQ(v.ir_version, io::kOnnxIrVersion);
  EXPECT_EQ(v.opset, 17);
  std::vector<std::string> ops;
  for (const auto& n : v.nodes) ops.push_back(n.op + ":" + n.name);
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv:0", "Relu:1", "MaxPool:2", "Flatten:3", "Gemm:4",
                                           "Relu:5", "Gemm:6"}));
  EXPECT_EQ(v.input_name, "input");
  EXPECT_EQ(v.input_dims, (std::vector<std::string>{"N", "3", "64", "64"}));
  EXPECT_EQ(v.output_name, "output");
  EXPECT_EQ(v.output_dims, (std::vector<std::string>{"N", "1"}));
  // The chain: each node reads the previous one's output; the last writes "output".
  EXPECT_EQ(v.nodes[0].inputs, (std::vector<std::string>{"input", "0.weight", "0.bias"}));
  for (size_t i = 1; i < v.nodes.size(); ++i)
    EXPECT_EQ(v.nodes[i].inputs[0], v.nodes[i - 1].outputs[0]);
  EXPECT_EQ(v.nodes.back().outputs, (std::vector<std::string>{"output"}));
  EXPECT_EQ(attr_ints(v.nodes[0], "strides"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(attr_ints(v.nodes[0], "kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(attr_ints(v.nodes[0], "pads"), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(attr_ints(v.nodes[2], "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(pb_one(v.nodes[4].attributes.at("transB"), 3).number, 1u);
  // Every parameter, as float32 raw data of its shape.
  ASSERT_EQ(v.initializers.size(), 6u);
  for (const auto& [name, t] : model->state_dict()) {
    ASSERT_TRUE(v.initializers.count(name)) << name;
    const PbMessage& init = v.initializers.at(name);
    std::vector<int64_t> dims;
    for (const PbField& d : pb_all(init, 1)) dims.push_back(static_cast<int64_t>(d.number));
    EXPECT_EQ(dims, t.shape()) << name;
    EXPECT_EQ(pb_one(init, 2).number, 1u) << name;
    const std::vector<float> values = t.to_vector<float>();
    ASSERT_EQ(pb_one(init, 9).bytes.size(), values.size() * 4) << name;
    EXPECT_EQ(std::memcmp(pb_one(init, 9).bytes.data(), values.data(), values.size() * 4), 0)
        << name;
  }
}

TEST(OnnxExport, Resnet18HasItsBlocksBatchNormsAndShortcuts) {
  Generator gen(2);
  auto model = nn::resnet18(3, nn::Init::PyTorch, &gen);
  const OnnxView v = onnx_view(io::onnx_model_bytes(*model, {3, 32, 32}, {}));
  std::map<std::string, int> count;
  for (const auto& n : v.nodes) ++count[n.op];
  EXPECT_EQ(count, (std::map<std::string, int>{{"Conv", 20},
                                               {"BatchNormalization", 20},
                                               {"Relu", 17},
                                               {"Add", 8},
                                               {"GlobalAveragePool", 1},
                                               {"Flatten", 1},
                                               {"Gemm", 1}}));
  EXPECT_EQ(v.output_dims, (std::vector<std::string>{"N", "3"}));
  // layer2.0's shortcut: a strided 1x1 convolution of the block's input, added to bn2's output.
  const OnnxNodeView* add = nullptr;
  for (const auto& n : v.nodes) add = n.name == "layer2.0.add" ? &n : add;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->inputs, (std::vector<std::string>{"layer2.0.bn2", "layer2.0.downsample.1"}));
  for (const auto& n : v.nodes) {
    if (n.name == "layer2.0.downsample.0") {
      EXPECT_EQ(n.inputs[0], "layer1.1.relu2");
      EXPECT_EQ(attr_ints(n, "strides"), (std::vector<int64_t>{2, 2}));
    }
    if (n.op == "BatchNormalization") {
      ASSERT_EQ(n.inputs.size(), 5u);
      EXPECT_EQ(n.inputs[3], n.name + ".running_mean");
      float eps = 0;
      std::memcpy(&eps, pb_one(n.attributes.at("epsilon"), 2).bytes.data(), 4);
      EXPECT_FLOAT_EQ(eps, 1e-5f);
    }
  }
  // Batch norm's running statistics are exported, num_batches_tracked (int64, unused) is not.
  EXPECT_TRUE(v.initializers.count("layer4.1.bn2.running_var"));
  EXPECT_FALSE(v.initializers.count("bn1.num_batches_tracked"));
}

// Every other layer kind: same padding with its odd pixel at the end, average pooling's
// count_include_pad, a Flatten of the last dimensions only (a Reshape), LeakyReLU's slope,
// a Linear over 3-D inputs (MatMul + Add), Dropout gone; and the probabilities option.
TEST(OnnxExport, EveryLayerKindAndTheOptions) {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::Conv2d>(3, 4, 4, Conv2dOptions().stride(2).padding(Padding::Same)),
      std::make_shared<nn::LeakyReLU>(0.2), std::make_shared<nn::AvgPool2d>(3, 1, 1, false),
      std::make_shared<nn::Dropout>(0.5), std::make_shared<nn::Flatten>(2),
      std::make_shared<nn::Linear>(16, 5), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Softmax>(1)});
  io::OnnxExportOptions options;
  options.probabilities = true;
  options.input_name = "image";
  options.metadata = {{"loom.class_names", "a,b"}};
  const OnnxView v = onnx_view(io::onnx_model_bytes(*model, {3, 7, 8}, options));
  std::vector<std::string> ops;
  for (const auto& n : v.nodes) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "LeakyRelu", "AveragePool", "Reshape", "MatMul",
                                           "Add", "Tanh", "Flatten", "Softmax", "Softmax"}));
  EXPECT_EQ(v.input_name, "image");
  EXPECT_EQ(v.input_dims, (std::vector<std::string>{"N", "3", "7", "8"}));
  EXPECT_EQ(v.output_dims, (std::vector<std::string>{"N", "20"}));
  // Height 7, stride 2, kernel 4: out 4, total padding 3 = 1 before + 2 after; width 8: 2 = 1 + 1.
  EXPECT_EQ(attr_ints(v.nodes[0], "pads"), (std::vector<int64_t>{1, 1, 2, 1}));
  EXPECT_EQ(pb_one(v.nodes[2].attributes.at("count_include_pad"), 3).number, 0u);
  const PbMessage& shape = v.initializers.at("4.shape");
  EXPECT_EQ(pb_one(shape, 2).number, 7u);  // INT64
  std::vector<int64_t> target(3);
  std::memcpy(target.data(), pb_one(shape, 9).bytes.data(), 24);
  EXPECT_EQ(target, (std::vector<int64_t>{0, 4, 16}));
  EXPECT_EQ(v.metadata.at("loom.class_names"), "a,b");
  // Without Softmax at the end, probabilities of one output are a sigmoid.
  auto binary = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 1)});
  const OnnxView b = onnx_view(io::onnx_model_bytes(*binary, {4}, options));
  EXPECT_EQ(b.nodes.back().op, "Sigmoid");
  // A module that is only the identity still has a node from input to output.
  nn::Identity identity;
  const OnnxView i = onnx_view(io::onnx_model_bytes(identity, {2}));
  ASSERT_EQ(i.nodes.size(), 1u);
  EXPECT_EQ(i.nodes[0].inputs, (std::vector<std::string>{"input"}));
  EXPECT_EQ(i.nodes[0].outputs, (std::vector<std::string>{"output"}));
}

class Doubling : public nn::Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "Doubling"; }
};

std::string onnx_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(OnnxExport, WhatCannotBeExportedIsRefusedNamingIt) {
  auto model = std::make_shared<nn::Sequential>();
  model->add("features", std::make_shared<nn::Linear>(4, 4))
      .add("odd", std::make_shared<Doubling>());
  const std::string path = ::testing::TempDir() + "onnx_refused_" + std::to_string(::getpid());
  std::string e = onnx_error_of([&] { io::export_onnx(*model, {4}, path); });
  EXPECT_NE(e.find("layer \"odd\" is a Doubling"), std::string::npos) << e;
  EXPECT_NE(e.find("no ONNX export"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(path));
  e = onnx_error_of([] {
    nn::Sequential flat{std::make_shared<nn::Flatten>(0)};
    io::onnx_model_bytes(flat, {2, 3});
  });
  EXPECT_NE(e.find("Flatten from dim 0"), std::string::npos) << e;
  e = onnx_error_of([] { io::onnx_model_bytes(*nn::seed_cnn(), {3, 32, 32}); });
  EXPECT_NE(e.find("[1, 3, 32, 32]"), std::string::npos) << e;
  e = onnx_error_of([] {
    io::OnnxExportOptions same;
    same.output_name = "input";
    io::onnx_model_bytes(*nn::seed_cnn(), {3, 64, 64}, same);
  });
  EXPECT_NE(e.find("must be non-empty and differ"), std::string::npos) << e;
}

TEST(OnnxExport, TheFileIsTheBytes) {
  Generator gen(3);
  auto model = nn::classic_cnn(2, nn::Init::PyTorch, &gen);
  const std::string path =
      ::testing::TempDir() + "onnx_file_" + std::to_string(::getpid()) + ".onnx";
  io::export_onnx(*model, {3, 64, 64}, path);
  EXPECT_EQ(io::read_file(path), io::onnx_model_bytes(*model, {3, 64, 64}));
  EXPECT_TRUE(model->is_training());  // its mode restored
  std::filesystem::remove(path);
  // Weights laid out channels-last are written in ONNX's (and PyTorch's) NCHW order.
  const std::string nchw = io::onnx_model_bytes(*model, {3, 64, 64});
  model->to(MemoryFormat::ChannelsLast);
  EXPECT_EQ(io::onnx_model_bytes(*model, {3, 64, 64}), nchw);
}

TEST(OnnxExport, VarintsEncodeAsProtobufDoes) {
  std::string out;
  io::ProtoWriter::append_varint(out, 300);
  EXPECT_EQ(out, std::string("\xAC\x02"));
  io::ProtoWriter w;
  w.varint(1, -1).fixed_float(2, 1.0f).bytes(3, "ab");
  EXPECT_EQ(w.str(), std::string("\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01"
                                 "\x15\x00\x00\x80\x3F"
                                 "\x1A\x02"
                                 "ab",
                                 20));
}

}  // namespace
}  // namespace loom
