// Specs from downloaded files (issue 14): deep nesting, duplicate keys, sizes that are not
// integers or not in range, and long names must end in a short loom::Error, quickly; specs of
// a sane depth and any width still build.
#include <ctime>
#include <nlohmann/json.hpp>

#include "io/crafted_files.h"
#include "testing.h"

namespace loom::nn {
namespace {

// The message of the loom::Error `f` throws ("" and a failure when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a loom::Error";
  return "";
}

// CPU time, not wall time: the bounds are on the work done, which a loaded machine (CI's ctest
// runs two tests on two cores) does not change.
double cpu_seconds_since(std::clock_t start) {
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

TEST(SpecHostile, DeepJsonIsRefusedWithAShortMessage) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& spec :
       {deep, R"({"type":"Linear","config":)" + deep + "}",
        R"({"type":"Sequential","config":{"layers":[{"name":"0","type":"ReLU","x":)" + deep +
            "}]}}"}) {
    const std::string message = error_of([&] { from_spec(spec); });
    EXPECT_NE(message.find("nested deeper than"), std::string::npos) << message.substr(0, 300);
    EXPECT_LT(message.size(), 300u) << message.substr(0, 300);
  }
  EXPECT_NE(error_of([&] {
              Sequential::from_config(R"({"layers":)" + deep + "}");
            }).find("nested deeper than"),
            std::string::npos);
}

TEST(SpecHostile, DeepSequentialsAreRefusedQuicklyAndSaneOnesBuild) {
  const std::clock_t start = std::clock();
  EXPECT_NE(
      error_of([] { from_spec(testing::nested_sequential_spec(5000)); }).find("nested deeper than"),
      std::string::npos);
  EXPECT_LT(cpu_seconds_since(start), 1.0 * testing::kSlowdown);
  const std::string spec = from_spec(testing::nested_sequential_spec(10))->spec_json();
  EXPECT_EQ(from_spec(spec)->spec_json(), spec);
  size_t levels = 0;
  for (size_t at = spec.find("Sequential"); at != std::string::npos;
       at = spec.find("Sequential", at + 1))
    ++levels;
  EXPECT_EQ(levels, 10u);
}

TEST(SpecHostile, WideSequentialsBuildInLinearTime) {
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 50000; ++i)
    layers.push_back({{"name", std::to_string(i)}, {"type", "Identity"}});
  const std::string spec =
      nlohmann::json{{"type", "Sequential"}, {"config", {{"layers", layers}}}}.dump();
  const std::clock_t start = std::clock();
  EXPECT_EQ(std::dynamic_pointer_cast<Sequential>(from_spec(spec))->size(), 50000u);
  EXPECT_LT(cpu_seconds_since(start), 2.0 * testing::kSlowdown);
}

TEST(SpecHostile, DuplicateKeysAreRefused) {
  for (const std::string& spec :
       {R"({"type":"ReLU","type":"Linear"})",
        R"({"type":"Linear","config":{"in_features":3,"out_features":2,"in_features":4}})",
        R"({"type":"Sequential","config":{"layers":[{"name":"a","name":"b","type":"ReLU"}]}})"}) {
    EXPECT_LOOM_ERROR(from_spec(spec), "duplicate key");
  }
}

TEST(SpecHostile, SizesMustBeIntegersInRangeAndNumbersFinite) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"Linear","config":{"in_features":3200.5,"out_features":2}})", "in_features"},
      {R"({"type":"Linear","config":{"in_features":3,"out_features":1e3}})", "out_features"},
      {R"({"type":"Linear","config":{"in_features":3,"out_features":2,"bias":1}})", "bias"},
      {R"({"type":"Linear","config":{"in_features":9223372036854775807,"out_features":2}})",
       "in_features"},
      {R"({"type":"Conv2d","config":{"in_channels":3,"out_channels":4,"kernel":[3.5,3],"stride":[1,1],
          "dilation":[1,1],"padding":[0,0]}})",
       "kernel"},
      {R"({"type":"Conv2d","config":{"in_channels":3,"out_channels":4,"kernel":[3,3],"stride":[1,0.5],
          "dilation":[1,1],"padding":[0,0]}})",
       "stride"},
      {R"({"type":"Conv2d","config":{"in_channels":3,"out_channels":4,"kernel":[3,3],"stride":[1,1],
          "dilation":[1,1],"padding":[-1,0]}})",
       "padding"},
      {R"({"type":"MaxPool2d","config":{"kernel":[2.5,2],"stride":[2,2],"padding":[0,0]}})",
       "kernel"},
      {R"({"type":"AvgPool2d","config":{"kernel":[2,2],"stride":[2,2],"padding":[0,0],"count_include_pad":0}})",
       "count_include_pad"},
      {R"({"type":"BatchNorm2d","config":{"num_features":4.5}})", "num_features"},
      {R"({"type":"BatchNorm2d","config":{"num_features":4,"eps":[1e-5]}})", "eps"},
      {R"({"type":"BasicBlock","config":{"in_channels":4,"out_channels":4,"stride":1.5}})",
       "stride"},
      {R"({"type":"Softmax","config":{"dim":0.5}})", "dim"},
      {R"({"type":"Flatten","config":{"start_dim":1.5}})", "start_dim"},
      {R"({"type":"LeakyReLU","config":{"negative_slope":"0.1"}})", "negative_slope"},
      {R"({"type":"Dropout","config":{"p":"0.5"}})", "p"},
  };
  for (const auto& [spec, key] : cases) {
    const std::string message = error_of([&] { from_spec(spec); });
    EXPECT_NE(message.find("\"" + key + "\""), std::string::npos) << spec << "\n  " << message;
  }
}

TEST(SpecHostile, LongNamesAreCutShortInMessages) {
  const std::string huge(100000, 'x');
  // A type, a size, a layer name, a whole layer, a type after a layer, a JSON token.
  const std::vector<std::string> specs = {
      R"({"type":")" + huge + R"("})",
      R"({"type":"Linear","config":{"in_features":")" + huge + R"("}})",
      R"({"type":"Sequential","config":{"layers":[{"name":")" + huge + R"(","type":"Warp"}]}})",
      R"({"type":"Sequential","config":{"layers":[{"name":"0","x":")" + huge + R"("}]}})",
      R"({"type":"Sequential","config":{"layers":[{"name":"0","type":"ReLU"},)"
      R"({"name":"1","type":")" +
          huge + R"("}]}})",
      "[\"" + huge + "\x01\"]"};
  for (const std::string& spec : specs) {
    const std::string message = error_of([&] { from_spec(spec); });
    EXPECT_LT(message.size(), 400u) << message.substr(0, 500);
  }
}

TEST(SpecHostile, LoadStateDictSummarisesLongListsOfNames) {
  Linear layer(3, 2);
  NamedTensors state = layer.state_dict();
  for (int i = 0; i < 5000; ++i) state.insert("extra_" + std::to_string(i), zeros({1}));
  const std::string message = error_of([&] { layer.load_state_dict(state); });
  EXPECT_NE(message.find("extra_0"), std::string::npos) << message.substr(0, 300);
  EXPECT_NE(message.find("4990 more"), std::string::npos) << message.substr(0, 500);
  EXPECT_LT(message.size(), 600u);
}

}  // namespace
}  // namespace loom::nn
