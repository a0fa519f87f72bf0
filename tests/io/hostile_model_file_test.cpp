// Hostile model files (issue 14): deep JSON, specs that ask for more than the file holds,
// oversized preprocessing, tensors of the wrong dtype, duplicate keys, fractional sizes and
// unbounded names must each end in a quick loom::Error naming the file and the problem.
#include <limits>
#include <nlohmann/json.hpp>

#include "crafted_files.h"
#include "loom/io/model_file.h"

namespace loom {
namespace {

using testing::CraftedFiles;
using HostileModelFile = CraftedFiles;

// The model of most cases: Sequential{Linear(3, 2)}, state "0.weight" [2, 3], "0.bias" [2].
std::shared_ptr<nn::Sequential> tiny() {
  Generator gen(1);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Linear>(3, 2, true, nn::Init::Keras, &gen));
  return model;
}

// A user's module type, with a parameter loom does not know of.
class Opaque : public nn::Module {
 public:
  Opaque() { register_parameter("secret", zeros({2})); }
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "HostileOpaque"; }
};

io::NamedTensors tensors_of(const nn::Module& model) { return model.state_dict(); }

io::Preprocessing prep() {
  io::Preprocessing p;
  p.class_names = {"cat", "dog"};
  return p;
}

// A model file with these tensors whose metadata has the given spec and preprocessing.
void write_model(const std::string& path, const std::string& spec, const io::NamedTensors& tensors,
                 const std::string& preprocessing = prep().to_json()) {
  io::Metadata metadata = io::detail::model_metadata(*tiny(), prep(), "model");
  metadata["loom.spec"] = spec;
  metadata["loom.preprocessing"] = preprocessing;
  io::save_safetensors(path, tensors, metadata);
}

std::string with_member(const std::string& json, const std::string& key,
                        const nlohmann::json& value) {
  nlohmann::json j = nlohmann::json::parse(json);
  j[key] = value;
  return j.dump();
}

TEST_F(HostileModelFile, DeepJsonInATensorsShapeDtypeOrOffsetsIsRefused) {
  const std::string deep = testing::nested_arrays(100000);
  for (const std::string& entry :
       {R"({"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]})",
        R"({"dtype":)" + deep + R"(,"shape":[1],"data_offsets":[0,4]})",
        R"({"dtype":"F32","shape":[1],"data_offsets":)" + deep + "}"}) {
    testing::write_bytes(path("deep.st"),
                         testing::safetensors_bytes(R"({"w":)" + entry + "}", "abcd"));
    EXPECT_REFUSED(io::load_model(path("deep.st")), path("deep.st"), "nested deeper than");
    EXPECT_REFUSED(io::load_safetensors(path("deep.st")), path("deep.st"), "nested deeper than");
  }
}

TEST_F(HostileModelFile, DeepJsonInTheSpecOrANestedSequentialIsRefused) {
  const auto model = tiny();
  write_model(path("deep.st"), testing::nested_arrays(100000), tensors_of(*model));
  EXPECT_REFUSED(io::load_model(path("deep.st")), path("deep.st"), "nested deeper than");
  write_model(path("deep_object.st"),
              R"({"type":"Linear","config":)" + testing::nested_arrays(100000) + "}",
              tensors_of(*model));
  EXPECT_REFUSED(io::load_model(path("deep_object.st")), path("deep_object.st"),
                 "nested deeper than");
  // 5,000 Sequentials inside each other: quadratic re-serialisation took 36 s and 7 GB.
  write_model(path("deep_seq.st"), testing::nested_sequential_spec(5000), tensors_of(*model));
  EXPECT_REFUSED(io::load_model(path("deep_seq.st")), path("deep_seq.st"), "nested deeper than");
  std::string deep_prep =
      prep().to_json();  // spliced as text: nlohmann's own dump() would overflow
  deep_prep.replace(deep_prep.find("\"mean\":[]"), 9, "\"mean\":" + testing::nested_arrays(100000));
  write_model(path("deep_prep.st"), model->spec_json(), tensors_of(*model), deep_prep);
  EXPECT_REFUSED(io::load_model(path("deep_prep.st")), path("deep_prep.st"), "nested deeper than");
}

TEST_F(HostileModelFile, ASpecAskingForMoreThanTheFileHoldsIsRefusedBeforeAllocating) {
  // Linear(20000, 20000) is 1.6 GB of weights; the file holds 24 bytes.
  const auto model = tiny();
  const std::string spec =
      R"({"type":"Sequential","config":{"layers":[{"name":"0","type":"Linear",)"
      R"("config":{"in_features":20000,"out_features":20000,"bias":true}}]}})";
  write_model(path("huge.st"), spec, tensors_of(*model));
  EXPECT_REFUSED(io::load_model(path("huge.st")), path("huge.st"), "0.weight", "[20000, 20000]",
                 "[2, 3]");
  // Also beside a user type whose state loom cannot predict (registered without a StateFunction).
  nn::register_module_type("HostileOpaque",
                           [](const std::string&) { return std::make_shared<Opaque>(); });
  const std::string mixed =
      R"({"type":"Sequential","config":{"layers":[{"name":"u","type":"HostileOpaque"},)"
      R"({"name":"0","type":"Linear","config":{"in_features":20000,"out_features":20000}}]}})";
  write_model(path("mixed.st"), mixed, tensors_of(*model));
  EXPECT_REFUSED(io::load_model(path("mixed.st")), path("mixed.st"), "0.weight", "[20000, 20000]");
  nn::Sequential fitting;
  fitting.add("u", std::make_shared<Opaque>()).add("0", std::make_shared<nn::Linear>(3, 2));
  write_model(path("fitting.st"), fitting.spec_json(), tensors_of(fitting));
  EXPECT_EQ(io::load_model(path("fitting.st")).model->state_dict().keys(),
            fitting.state_dict().keys());
  // The same through the spec's names: a tensor the spec does not have, or one it lacks.
  io::NamedTensors renamed;
  for (const auto& [name, t] : tensors_of(*model))
    renamed.insert(name == "0.weight" ? "0.weights" : name, t);
  write_model(path("renamed.st"), model->spec_json(), renamed);
  EXPECT_REFUSED(io::load_model(path("renamed.st")), path("renamed.st"), "0.weights", "0.weight");
}

TEST_F(HostileModelFile, WideSpecsStillBuildInLinearTime) {
  // 20,000 layers in one Sequential: legitimate in form, and it must not be quadratic.
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 20000; ++i) layers.push_back({{"name", std::to_string(i)}, {"type", "ReLU"}});
  const std::string spec =
      nlohmann::json{{"type", "Sequential"}, {"config", {{"layers", layers}}}}.dump();
  write_model(path("wide.st"), spec, {});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(
      std::dynamic_pointer_cast<nn::Sequential>(io::load_model(path("wide.st")).model)->size(),
      20000u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            2.0 * testing::kSlowdown);
}

TEST_F(HostileModelFile, OversizedOrInconsistentPreprocessingIsRefused) {
  const auto model = tiny();
  io::Preprocessing big = prep();
  big.height = big.width = 65536;  // 65536 x 65536 x 3 floats: a 48 GiB input
  write_model(path("big.st"), model->spec_json(), tensors_of(*model), big.to_json());
  EXPECT_REFUSED(io::load_model(path("big.st")), path("big.st"), "65536", "4096");
  io::Preprocessing normalised = prep();
  normalised.mean = {0.5, 0.5, 0.5};
  normalised.std = {0.2, 0.2, 0.2};
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"rescale", 0.0},
                                                           {"rescale", -1.0},
                                                           {"std", {0.2, 0.0, 0.3}},
                                                           {"std", {0.2, -0.1, 0.3}},
                                                           {"height", 64.5},
                                                           {"channels", 3.0},
                                                           {"height", -1},
                                                           {"width", "64"},
                                                           {"class_names", {"cat", 1}}}) {
    write_model(path("p.st"), model->spec_json(), tensors_of(*model),
                with_member(normalised.to_json(), key, value));
    EXPECT_REFUSED(io::load_model(path("p.st")), path("p.st"), "preprocessing", key);
  }
  // nlohmann refuses numbers beyond double's range (so no inf comes from JSON).
  write_model(path("inf.st"), model->spec_json(), tensors_of(*model),
              R"({"height":64,"width":64,"channels":3,"rescale":1e309,"class_names":[]})");
  EXPECT_REFUSED(io::load_model(path("inf.st")), path("inf.st"), "preprocessing");
  // The spec says its input has 3 channels (the first Conv2d's in_channels).
  auto conv = std::make_shared<nn::Sequential>();
  conv->add(std::make_shared<nn::Conv2d>(3, 4, 3));
  io::Preprocessing gray = prep();
  gray.channels = 1;
  write_model(path("gray.st"), conv->spec_json(), tensors_of(*conv), gray.to_json());
  EXPECT_REFUSED(io::load_model(path("gray.st")), path("gray.st"), "1 channel", "3");
}

TEST_F(HostileModelFile, TensorsOfAnotherDtypeAreRefusedNotConverted) {
  const auto model = tiny();
  io::NamedTensors tensors = tensors_of(*model);
  tensors.at("0.weight") = zeros({2, 3}, kInt32);
  write_model(path("i32.st"), model->spec_json(), tensors);
  EXPECT_REFUSED(io::load_model(path("i32.st")), path("i32.st"), "0.weight", "int32", "float32");
  tensors.at("0.weight") = zeros({2, 3}, kFloat64);
  write_model(path("f64.st"), model->spec_json(), tensors);
  EXPECT_REFUSED(io::load_model(path("f64.st")), path("f64.st"), "0.weight", "float64");
}

TEST_F(HostileModelFile, DuplicateKeysAreRefused) {
  const auto model = tiny();
  write_model(path("m.st"), model->spec_json(), tensors_of(*model));
  const std::string bytes = io::read_file(path("m.st"));
  const std::string header = testing::header_of(bytes), data = testing::data_of(bytes);
  // A second "loom.spec" in the metadata, a second "0.bias" tensor entry, a second "type".
  const std::string second_spec = R"("loom.spec":"{\"type\":\"Identity\"}",)";
  std::string twice = header;
  twice.insert(twice.find("\"loom.spec\""), second_spec);
  testing::write_bytes(path("meta.st"), testing::safetensors_bytes(twice, data));
  EXPECT_REFUSED(io::load_model(path("meta.st")), path("meta.st"), "duplicate key", "loom.spec");
  const nlohmann::json parsed = nlohmann::json::parse(header);
  twice = header;
  twice.insert(1, "\"0.bias\":" + parsed.at("0.bias").dump() + ",");
  testing::write_bytes(path("tensor.st"), testing::safetensors_bytes(twice, data));
  EXPECT_REFUSED(io::load_safetensors(path("tensor.st")), path("tensor.st"), "duplicate key",
                 "0.bias");
  write_model(path("spec.st"), R"({"type":"Identity","type":"Sequential","config":{"layers":[]}})",
              {});
  EXPECT_REFUSED(io::load_model(path("spec.st")), path("spec.st"), "duplicate key", "type");
  write_model(
      path("prep.st"), model->spec_json(), tensors_of(*model),
      R"({"height":64,"height":4096,"width":64,"channels":3,"rescale":1,"class_names":[]})");
  EXPECT_REFUSED(io::load_model(path("prep.st")), path("prep.st"), "duplicate key", "height");
}

TEST_F(HostileModelFile, SizesMustBeIntegersInRange) {
  const auto model = tiny();
  const std::string spec = model->spec_json();
  for (const std::string& bad :
       {"3.5", "3200.5", "-3", "1e20", "true", "\"3\"", "9223372036854775808"}) {
    std::string edited = spec;
    edited.replace(edited.find("\"in_features\":3") + 14, 1, bad);
    write_model(path("f.st"), edited, tensors_of(*model));
    EXPECT_REFUSED(io::load_model(path("f.st")), path("f.st"), "in_features");
  }
}

TEST_F(HostileModelFile, ShapesAndOffsetsAreCheckedArithmetic) {
  const std::string max = std::to_string(std::numeric_limits<uint64_t>::max());
  const std::string big = std::to_string(uint64_t{1} << 63);
  // Each with as many data bytes as its offsets claim, so only the shape or offsets are wrong.
  for (const auto& [entry, data] : std::vector<std::pair<std::string, std::string>>{
           {R"({"dtype":"F32","shape":[0,)" + max + R"(],"data_offsets":[0,0]})", ""},
           {R"({"dtype":"F32","shape":[0,)" + big + R"(],"data_offsets":[0,0]})", ""},
           {R"({"dtype":"F32","shape":[)" + big + R"(],"data_offsets":[0,0]})", ""},
           {R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]})", ""},
           {R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]})", ""},
           {R"({"dtype":"F32","shape":[1],"data_offsets":[)" + max + "," + max + "]}", "abcd"},
           {R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", "abcd"},
           {R"({"dtype":"F32","shape":[1],"data_offsets":[0,-4]})", "abcd"},
           {R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", "abcd"},
           {R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", "abcd"}}) {
    testing::write_bytes(path("s.st"), testing::safetensors_bytes(R"({"w":)" + entry + "}", data));
    EXPECT_REFUSED(io::load_safetensors(path("s.st")), path("s.st"), "tensor \"w\"");
  }
}

TEST_F(HostileModelFile, LargeHeadersAreRefusedCheaply) {
  // The costliest headers to parse: one long array, or one object of many short keys.
  std::string numbers = R"({"a":[0)", keys = R"({"k":0)";
  while (numbers.size() < io::kMaxHeaderBytes - 4) numbers += ",0";
  for (size_t i = 0; keys.size() < io::kMaxHeaderBytes - 24; ++i)
    keys += ",\"" + std::to_string(i) + "\":0";
  for (const std::string& header : {numbers + "]}", keys + "}"}) {
    ASSERT_LE(header.size(), io::kMaxHeaderBytes);
    testing::write_bytes(path("big.st"), testing::safetensors_bytes(header));
    EXPECT_REFUSED(io::load_model(path("big.st")), path("big.st"),
                   "needs dtype, shape and data_offsets");
  }
  // A repeated key at the very end is found as cheaply.
  testing::write_bytes(path("dup.st"), testing::safetensors_bytes(keys + R"(,"k":1})"));
  EXPECT_REFUSED(io::load_model(path("dup.st")), path("dup.st"), "duplicate key \"k\"");
  testing::write_bytes(
      path("huge.st"),
      testing::safetensors_bytes(numbers + std::string(io::kMaxHeaderBytes, ' ') + "]}"));
  EXPECT_REFUSED(io::load_model(path("huge.st")), path("huge.st"), "header length");
}

TEST_F(HostileModelFile, UntrustedTextInMessagesIsCutShort) {
  const std::string huge(100000, 'x');
  const auto model = tiny();
  // A tensor name, a dtype, a module type, a kind, a version, an interpolation, a JSON token.
  testing::write_bytes(
      path("name.st"),
      testing::safetensors_bytes(
          R"({")" + huge + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "abcd"));
  EXPECT_REFUSED(io::load_safetensors(path("name.st")), path("name.st"), "xxxx");
  testing::write_bytes(
      path("dtype.st"),
      testing::safetensors_bytes(
          R"({"w":{"dtype":")" + huge + R"(","shape":[1],"data_offsets":[0,4]}})", "abcd"));
  EXPECT_REFUSED(io::load_safetensors(path("dtype.st")), path("dtype.st"), "unsupported dtype");
  testing::write_bytes(path("token.st"),
                       testing::safetensors_bytes(R"({"w":")" + huge + "\x01\"}"));
  EXPECT_REFUSED(io::load_safetensors(path("token.st")), path("token.st"), "malformed JSON");
  write_model(path("type.st"), R"({"type":")" + huge + R"("})", {});
  EXPECT_REFUSED(io::load_model(path("type.st")), path("type.st"), "unknown module type");
  write_model(
      path("layer.st"),
      R"({"type":"Sequential","config":{"layers":[{"type":"ReLU","x":")" + huge + R"("}]}})", {});
  EXPECT_REFUSED(io::load_model(path("layer.st")), path("layer.st"), "needs a \"name\"");
  write_model(path("interp.st"), model->spec_json(), tensors_of(*model),
              with_member(prep().to_json(), "interpolation", huge));
  EXPECT_REFUSED(io::load_model(path("interp.st")), path("interp.st"), "interpolation");
  for (const auto& [key, fragment] :
       {std::pair{"loom.kind", "loom.kind"}, {"loom.format_version", "format version"}}) {
    io::Metadata metadata = io::detail::model_metadata(*model, prep(), "model");
    metadata[key] = huge;
    io::save_safetensors(path("meta.st"), tensors_of(*model), metadata);
    EXPECT_REFUSED(io::load_model(path("meta.st")), path("meta.st"), fragment);
  }
  // Thousands of unexpected tensors are summarised, not listed.
  io::NamedTensors many = tensors_of(*model);
  for (int i = 0; i < 5000; ++i) many.insert("extra." + std::to_string(i), zeros({1}));
  write_model(path("many.st"), model->spec_json(), many);
  EXPECT_REFUSED(io::load_model(path("many.st")), path("many.st"), "extra.0", "more");
}

TEST_F(HostileModelFile, AFailedLoadLeavesTheFileAsItWas) {
  const auto model = tiny();
  write_model(path("i32.st"), model->spec_json(),
              {{"0.weight", zeros({2, 3}, kInt32)}, {"0.bias", zeros({2})}});
  const std::string before = io::read_file(path("i32.st"));
  EXPECT_THROW(io::load_model(path("i32.st")), Error);
  EXPECT_EQ(io::read_file(path("i32.st")), before);
}

}  // namespace
}  // namespace loom
