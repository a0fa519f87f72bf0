// ONNX export: each loom layer becomes one or a few ONNX nodes (docs/onnx.md's table), its
// tensors initializers named as in loom's state_dict; the graph is then written with
// protobuf_writer.h under onnx.proto's field numbers.
#include "loom/io/onnx_export.h"

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "loom/config.h"
#include "loom/io/atomic_file.h"
#include "loom/io/protobuf_writer.h"
#include "loom/nn/activation.h"
#include "loom/nn/batch_norm.h"
#include "loom/nn/conv.h"
#include "loom/nn/dropout.h"
#include "loom/nn/linear.h"
#include "loom/nn/models/resnet.h"
#include "loom/nn/pooling.h"
#include "loom/nn/sequential.h"
#include "loom/ops/activation.h"
#include "loom/ops/softmax.h"
#include "loom/tensor/autograd.h"
#include "loom/tensor/error.h"

namespace loom::io {

namespace {

// onnx.proto's field numbers (github.com/onnx/onnx, onnx/onnx.proto), only those written here.
namespace pb {
constexpr int kModelIrVersion = 1, kModelProducerName = 2, kModelProducerVersion = 3,
              kModelGraph = 7, kModelOpsetImport = 8, kModelMetadataProps = 14;
constexpr int kOpsetIdVersion = 2;             // OperatorSetIdProto (domain 1: "")
constexpr int kEntryKey = 1, kEntryValue = 2;  // StringStringEntryProto
constexpr int kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11,
              kGraphOutput = 12;
constexpr int kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5;
constexpr int kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrS = 4, kAttrInts = 8, kAttrType = 20;
constexpr int kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
constexpr int kValueInfoName = 1, kValueInfoType = 2;
constexpr int kTypeTensorType = 1;                            // TypeProto
constexpr int kTensorTypeElemType = 1, kTensorTypeShape = 2;  // TypeProto.Tensor
constexpr int kShapeDim = 1, kDimValue = 1, kDimParam = 2;    // TensorShapeProto(.Dimension)
// AttributeProto.AttributeType and TensorProto.DataType.
constexpr int64_t kTypeFloat = 1, kTypeInt = 2, kTypeString = 3, kTypeInts = 7;
constexpr int64_t kDataFloat = 1, kDataInt64 = 7;
}  // namespace pb

struct Attribute {
  std::string name;
  int64_t type;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<int64_t> ints;
};

Attribute int_attr(const std::string& name, int64_t v) {
  return {name, pb::kTypeInt, 0, v, {}, {}};
}
Attribute float_attr(const std::string& name, double v) {
  return {name, pb::kTypeFloat, static_cast<float>(v), 0, {}, {}};
}
Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  return {name, pb::kTypeInts, 0, 0, {}, std::move(v)};
}

struct Node {
  std::string op, name;
  std::vector<std::string> inputs, outputs;
  std::vector<Attribute> attributes;
};

// A value of the graph: its name and what loom computes for it on the example (its shape).
struct Value {
  std::string name;
  Tensor sample;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(const OnnxExportOptions& options) {
    taken_.insert(options.input_name);
    taken_.insert(options.output_name);
  }

  // One node, named after the layer's path; its one output is a value of the same name.
  std::string node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                   std::vector<Attribute> attributes = {}) {
    const std::string out = unique(name.empty() ? op : name);
    nodes.push_back({op, out, std::move(inputs), {out}, std::move(attributes)});
    return out;
  }

  std::string float_initializer(const std::string& name, const Tensor& t) {
    const std::vector<float> values = t.to(kCPU, kFloat32).contiguous().to_vector<float>();
    return initializer(name, t.shape(), pb::kDataFloat, values.data(),
                       values.size() * sizeof(float));
  }
  std::string int64_initializer(const std::string& name, const std::vector<int64_t>& values) {
    return initializer(name, {static_cast<int64_t>(values.size())}, pb::kDataInt64, values.data(),
                       values.size() * sizeof(int64_t));
  }

  std::vector<Node> nodes;
  std::vector<ProtoWriter> initializers;

 private:
  // Raw little-endian data, as loom's tensors are on the little-endian hosts it builds for.
  std::string initializer(const std::string& name, const Shape& shape, int64_t type,
                          const void* data, size_t bytes) {
    const std::string unique_name = unique(name);
    ProtoWriter t;
    t.varints(pb::kTensorDims, shape)
        .varint(pb::kTensorDataType, type)
        .bytes(pb::kTensorName, unique_name)
        .bytes(pb::kTensorRawData, data, bytes);
    initializers.push_back(std::move(t));
    return unique_name;
  }

  std::string unique(const std::string& hint) {
    std::string name = hint;
    for (int n = 1; taken_.count(name) != 0; ++n) name = hint + "_" + std::to_string(n);
    taken_.insert(name);
    return name;
  }
  std::unordered_set<std::string> taken_;
};

std::string join_path(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

std::array<int64_t, 2> pair_of(const nlohmann::json& j) {
  return {j[0].get<int64_t>(), j[1].get<int64_t>()};
}

Value emit(GraphBuilder& g, nn::Module& m, const std::string& path, const Value& in);

Value emit_conv(GraphBuilder& g, nn::Conv2d& conv, const std::string& path, const Value& in) {
  const nlohmann::json c = nlohmann::json::parse(conv.config_json());
  const auto kernel = pair_of(c["kernel"]), stride = pair_of(c["stride"]),
             dilation = pair_of(c["dilation"]);
  std::vector<int64_t> pads(4, 0);  // ONNX: h_begin, w_begin, h_end, w_end
  if (c["padding"].is_array()) {
    const auto p = pair_of(c["padding"]);
    pads = {p[0], p[1], p[0], p[1]};
  } else if (c["padding"] == "same") {
    // loom's (Keras') rule: out = ceil(in / stride), the odd pixel of the padding at the end.
    for (int a = 0; a < 2; ++a) {
      const int64_t size = in.sample.shape()[2 + a];
      const int64_t out = (size + stride[a] - 1) / stride[a];
      const int64_t total =
          std::max<int64_t>((out - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 - size, 0);
      pads[a] = total / 2;
      pads[a + 2] = total - total / 2;
    }
  }
  std::vector<std::string> inputs{in.name,
                                  g.float_initializer(join_path(path, "weight"), conv.weight)};
  if (conv.bias.defined())
    inputs.push_back(g.float_initializer(join_path(path, "bias"), conv.bias));
  const std::string out =
      g.node("Conv", path, inputs,
             {ints_attr("kernel_shape", {kernel[0], kernel[1]}),
              ints_attr("strides", {stride[0], stride[1]}),
              ints_attr("dilations", {dilation[0], dilation[1]}), ints_attr("pads", pads)});
  return {out, conv.forward(in.sample)};
}

Value emit_linear(GraphBuilder& g, nn::Linear& linear, const std::string& path, const Value& in) {
  const Tensor out_sample = linear.forward(in.sample);
  if (in.sample.dim() == 2) {  // Gemm: x [N, in] times W^T ([out, in], transB), plus b
    std::vector<std::string> inputs{in.name,
                                    g.float_initializer(join_path(path, "weight"), linear.weight)};
    if (linear.bias.defined()) {
      inputs.push_back(g.float_initializer(join_path(path, "bias"), linear.bias));
    }
    return {g.node("Gemm", path, inputs, {int_attr("transB", 1)}), out_sample};
  }
  // x [N, ..., in] @ W^T [in, out] (+ b): MatMul broadcasts over the leading dimensions.
  const std::string wt = g.float_initializer(join_path(path, "weight_t"), linear.weight.t());
  std::string out =
      g.node("MatMul", linear.bias.defined() ? join_path(path, "matmul") : path, {in.name, wt});
  if (linear.bias.defined()) {
    out = g.node("Add", path, {out, g.float_initializer(join_path(path, "bias"), linear.bias)});
  }
  return {out, out_sample};
}

Value emit_batch_norm(GraphBuilder& g, nn::BatchNorm2d& bn, const std::string& path,
                      const Value& in) {
  const nlohmann::json c = nlohmann::json::parse(bn.config_json());
  const std::string out =
      g.node("BatchNormalization", path,
             {in.name, g.float_initializer(join_path(path, "weight"), bn.weight),
              g.float_initializer(join_path(path, "bias"), bn.bias),
              g.float_initializer(join_path(path, "running_mean"), bn.running_mean),
              g.float_initializer(join_path(path, "running_var"), bn.running_var)},
             {float_attr("epsilon", c["eps"].get<double>())});
  return {out, bn.forward(in.sample)};
}

// MaxPool2d and AvgPool2d: a stride of 0 is the kernel; loom rounds the output size down, as
// ONNX does without ceil_mode.
Value emit_pool(GraphBuilder& g, nn::Module& pool, const std::string& op, const std::string& path,
                const Value& in) {
  const nlohmann::json c = nlohmann::json::parse(pool.config_json());
  const auto kernel = pair_of(c["kernel"]), padding = pair_of(c["padding"]);
  auto stride = pair_of(c["stride"]);
  for (int a = 0; a < 2; ++a) stride[a] = stride[a] == 0 ? kernel[a] : stride[a];
  std::vector<Attribute> attributes{
      ints_attr("kernel_shape", {kernel[0], kernel[1]}),
      ints_attr("strides", {stride[0], stride[1]}),
      ints_attr("pads", {padding[0], padding[1], padding[0], padding[1]})};
  if (c.contains("count_include_pad")) {
    attributes.push_back(int_attr("count_include_pad", c["count_include_pad"].get<bool>() ? 1 : 0));
  }
  return {g.node(op, path, {in.name}, attributes), pool.forward(in.sample)};
}

Value emit_flatten(GraphBuilder& g, nn::Flatten& flatten, const std::string& path,
                   const Value& in) {
  const nlohmann::json c = nlohmann::json::parse(flatten.config_json());
  const int64_t rank = in.sample.dim();
  int64_t start = c["start_dim"].get<int64_t>(), end = c["end_dim"].get<int64_t>();
  start = start < 0 ? start + rank : start;
  end = end < 0 ? end + rank : end;
  LOOM_CHECK(start >= 1, "export_onnx: ", path.empty() ? "Flatten" : path, " (Flatten from dim ",
             start, ") merges the batch dimension, which the ONNX graph leaves free");
  const Tensor out_sample = flatten.forward(in.sample);
  if (start == 1 && end == rank - 1) {
    return {g.node("Flatten", path, {in.name}, {int_attr("axis", 1)}), out_sample};
  }
  std::vector<int64_t> shape = out_sample.shape();
  shape[0] = 0;  // Reshape's 0: the input's own size (the free batch)
  const std::string target = g.int64_initializer(join_path(path, "shape"), shape);
  return {g.node("Reshape", path, {in.name, target}), out_sample};
}

// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), as BasicBlock::forward computes it.
Value emit_basic_block(GraphBuilder& g, nn::BasicBlock& block, const std::string& path,
                       const Value& in) {
  std::map<std::string, nn::ModulePtr> child;
  for (const auto& [name, module] : block.named_children()) child[name] = module;
  LOOM_ASSERT(child.count("conv1") && child.count("bn1") && child.count("conv2") &&
              child.count("bn2"));
  Value x = emit(g, *child["conv1"], join_path(path, "conv1"), in);
  x = emit(g, *child["bn1"], join_path(path, "bn1"), x);
  x = {g.node("Relu", join_path(path, "relu1"), {x.name}), relu(x.sample)};
  x = emit(g, *child["conv2"], join_path(path, "conv2"), x);
  x = emit(g, *child["bn2"], join_path(path, "bn2"), x);
  const Value shortcut = child.count("downsample")
                             ? emit(g, *child["downsample"], join_path(path, "downsample"), in)
                             : in;
  const std::string sum = g.node("Add", join_path(path, "add"), {x.name, shortcut.name});
  return {g.node("Relu", join_path(path, "relu2"), {sum}), block.forward(in.sample)};
}

// `path` is the layer's name in the module (its tensors' prefix in state_dict).
Value emit(GraphBuilder& g, nn::Module& m, const std::string& path, const Value& in) {
  if (auto* seq = dynamic_cast<nn::Sequential*>(&m)) {
    Value x = in;
    for (const auto& [name, child] : seq->named_children())
      x = emit(g, *child, join_path(path, name), x);
    return x;
  }
  if (auto* conv = dynamic_cast<nn::Conv2d*>(&m)) return emit_conv(g, *conv, path, in);
  if (auto* linear = dynamic_cast<nn::Linear*>(&m)) return emit_linear(g, *linear, path, in);
  if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m)) return emit_batch_norm(g, *bn, path, in);
  if (auto* block = dynamic_cast<nn::BasicBlock*>(&m)) return emit_basic_block(g, *block, path, in);
  if (auto* flatten = dynamic_cast<nn::Flatten*>(&m)) return emit_flatten(g, *flatten, path, in);
  if (dynamic_cast<nn::MaxPool2d*>(&m)) return emit_pool(g, m, "MaxPool", path, in);
  if (dynamic_cast<nn::AvgPool2d*>(&m)) return emit_pool(g, m, "AveragePool", path, in);
  if (dynamic_cast<nn::GlobalAvgPool2d*>(&m)) {  // [N, C, 1, 1], then [N, C] as loom's
    const std::string pooled = g.node("GlobalAveragePool", join_path(path, "pool"), {in.name});
    return {g.node("Flatten", path, {pooled}, {int_attr("axis", 1)}), m.forward(in.sample)};
  }
  if (dynamic_cast<nn::ReLU*>(&m)) return {g.node("Relu", path, {in.name}), m.forward(in.sample)};
  if (dynamic_cast<nn::Sigmoid*>(&m)) {
    return {g.node("Sigmoid", path, {in.name}), m.forward(in.sample)};
  }
  if (dynamic_cast<nn::Tanh*>(&m)) return {g.node("Tanh", path, {in.name}), m.forward(in.sample)};
  if (dynamic_cast<nn::LeakyReLU*>(&m)) {
    const double slope = nlohmann::json::parse(m.config_json())["negative_slope"].get<double>();
    return {g.node("LeakyRelu", path, {in.name}, {float_attr("alpha", slope)}),
            m.forward(in.sample)};
  }
  if (dynamic_cast<nn::Softmax*>(&m)) {
    const int64_t dim = nlohmann::json::parse(m.config_json())["dim"].get<int64_t>();
    return {g.node("Softmax", path, {in.name}, {int_attr("axis", dim)}), m.forward(in.sample)};
  }
  if (dynamic_cast<nn::Identity*>(&m) || dynamic_cast<nn::Dropout*>(&m)) return in;  // eval mode
  LOOM_FAIL("export_onnx: ", path.empty() ? "the module" : "layer \"" + path + "\"", " is a ",
            m.type_name(),
            ", which has no ONNX export (exportable: Sequential, Conv2d, Linear, BatchNorm2d, "
            "ReLU, LeakyReLU, Sigmoid, Tanh, Softmax, Flatten, Identity, Dropout, MaxPool2d, "
            "AvgPool2d, GlobalAvgPool2d, BasicBlock)");
}

ProtoWriter attribute_proto(const Attribute& a) {
  ProtoWriter w;
  w.bytes(pb::kAttrName, a.name).varint(pb::kAttrType, a.type);
  if (a.type == pb::kTypeFloat) w.fixed_float(pb::kAttrF, a.f);
  if (a.type == pb::kTypeInt) w.varint(pb::kAttrI, a.i);
  if (a.type == pb::kTypeString) w.bytes(pb::kAttrS, a.s);
  if (a.type == pb::kTypeInts) w.varints(pb::kAttrInts, a.ints);
  return w;
}

// A float tensor [N, rest...] with the batch free.
ProtoWriter value_info(const std::string& name, const Shape& shape) {
  ProtoWriter dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    ProtoWriter dim;
    if (i == 0) {
      dim.bytes(pb::kDimParam, "N");
    } else {
      dim.varint(pb::kDimValue, shape[i]);
    }
    dims.message(pb::kShapeDim, dim);
  }
  ProtoWriter tensor_type;
  tensor_type.varint(pb::kTensorTypeElemType, pb::kDataFloat).message(pb::kTensorTypeShape, dims);
  ProtoWriter type;
  type.message(pb::kTypeTensorType, tensor_type);
  ProtoWriter info;
  info.bytes(pb::kValueInfoName, name).message(pb::kValueInfoType, type);
  return info;
}

}  // namespace

std::string onnx_model_bytes(nn::Module& module_or_wrapper, const Shape& example_shape,
                             const OnnxExportOptions& options) {
  LOOM_CHECK(!options.input_name.empty() && !options.output_name.empty() &&
                 options.input_name != options.output_name,
             "export_onnx: the input and output names must be non-empty and differ, got \"",
             options.input_name, "\" and \"", options.output_name, "\"");
  nn::Module& module = module_or_wrapper.unwrapped();  // DDP, pipeline: the trained model
  nn::EvalModeGuard eval(module);
  NoGradGuard no_grad;
  Shape batch_shape{1};
  batch_shape.insert(batch_shape.end(), example_shape.begin(), example_shape.end());
  const Tensor example = zeros(batch_shape, TensorOptions().device(module.device()));
  try {
    module.forward(example);
  } catch (const Error& e) {
    LOOM_FAIL("export_onnx: the module does not take inputs of ", shape_str(batch_shape),
              " (the batch, then example_shape): ", e.what());
  }

  GraphBuilder g(options);
  Value out = emit(g, module, "", {options.input_name, example});
  if (options.probabilities) {  // as nn::predict: sigmoid of one logit, else a softmax
    out = out.sample.dim() == 2 && out.sample.shape()[1] == 1
              ? Value{g.node("Sigmoid", "probabilities", {out.name}), sigmoid(out.sample)}
              : Value{g.node("Softmax", "probabilities", {out.name}, {int_attr("axis", -1)}),
                      softmax(out.sample, -1)};
  }
  if (out.name == options.input_name) out.name = g.node("Identity", "identity", {out.name});
  for (Node& n : g.nodes) {  // the last value is the graph's output, under its name
    for (auto* names : {&n.inputs, &n.outputs}) {
      for (std::string& name : *names) name = name == out.name ? options.output_name : name;
    }
  }

  ProtoWriter graph;
  for (const Node& n : g.nodes) {
    ProtoWriter node;
    for (const std::string& i : n.inputs) node.bytes(pb::kNodeInput, i);
    for (const std::string& o : n.outputs) node.bytes(pb::kNodeOutput, o);
    node.bytes(pb::kNodeName, n.name).bytes(pb::kNodeOpType, n.op);
    for (const Attribute& a : n.attributes) node.message(pb::kNodeAttribute, attribute_proto(a));
    graph.message(pb::kGraphNode, node);
  }
  graph.bytes(pb::kGraphName, module.type_name());
  for (const ProtoWriter& t : g.initializers) graph.message(pb::kGraphInitializer, t);
  graph.message(pb::kGraphInput, value_info(options.input_name, batch_shape));
  graph.message(pb::kGraphOutput, value_info(options.output_name, out.sample.shape()));

  ProtoWriter opset;
  opset.varint(pb::kOpsetIdVersion, kOnnxOpset);
  ProtoWriter model;
  model.varint(pb::kModelIrVersion, kOnnxIrVersion)
      .bytes(pb::kModelProducerName, "loom")
      .bytes(pb::kModelProducerVersion, std::to_string(LOOM_VERSION_MAJOR) + "." +
                                            std::to_string(LOOM_VERSION_MINOR) + "." +
                                            std::to_string(LOOM_VERSION_PATCH))
      .message(pb::kModelGraph, graph)
      .message(pb::kModelOpsetImport, opset);
  for (const auto& [key, value] : options.metadata) {
    ProtoWriter entry;
    entry.bytes(pb::kEntryKey, key).bytes(pb::kEntryValue, value);
    model.message(pb::kModelMetadataProps, entry);
  }
  return model.str();
}

void export_onnx(nn::Module& module, const Shape& example_shape, const std::string& path,
                 const OnnxExportOptions& options) {
  const std::string bytes = onnx_model_bytes(module, example_shape, options);
  write_file_atomically(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

}  // namespace loom::io
