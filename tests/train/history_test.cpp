// History::from_json reads the history a checkpoint carries: only a list of per-epoch objects of
// numbers, in epoch order, passes; deep, duplicated or odd JSON is refused with a short message.
#include "testing.h"

namespace loom::train {
namespace {

TEST(HistoryJson, RoundTripsAndKeepsEveryMetric) {
  History h;
  h.epochs = {{{"loss", 0.5}, {"accuracy", 0.75}}, {{"loss", 0.25}, {"val_loss", 0.3}}};
  EXPECT_EQ(History::from_json(h.to_json(), "h").epochs, h.epochs);
  EXPECT_TRUE(History::from_json("[]", "h").epochs.empty());
}

TEST(HistoryJson, AnythingButAListOfEpochMetricsIsRefused) {
  for (const std::string& text :
       {R"([1, 2])", R"([[0.5]])", R"([{"epoch":0,"loss":"low"}])", R"([{"epoch":1,"loss":0.5}])",
        R"([{"epoch":0.5}])", R"([{"epoch":0,"loss":{"a":1}}])", R"([{"epoch":0,"loss":1e999}])",
        R"([{"epoch":0,"loss":1,"loss":2}])", R"({"epoch":0})"}) {
    EXPECT_LOOM_ERROR(History::from_json(text, "f.ckpt"), "f.ckpt: malformed history");
  }
}

TEST(HistoryJson, DeepOrLongInputGivesAShortMessage) {
  for (const std::string& text : {std::string(100000, '[') + std::string(100000, ']'),
                                  R"([{"epoch":0,")" + std::string(100000, 'x') + R"(":"s"}])",
                                  "[" + std::string(100000, '1') + "x]"}) {
    try {
      History::from_json(text, "f.ckpt");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_LT(std::string(e.what()).size(), 400u) << std::string(e.what()).substr(0, 500);
      EXPECT_NE(std::string(e.what()).find("f.ckpt"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace loom::train
