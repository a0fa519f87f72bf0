// The one parser for JSON from files (nn/untrusted_json.h): depth limit, duplicate keys within
// one object only, short excerpts, and member reads that refuse what nlohmann would convert.
#include "loom/nn/untrusted_json.h"

#include "testing.h"

namespace loom::nn {
namespace {

using nlohmann::json;

TEST(UntrustedJson, NestingIsLimitedWhileParsing) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_untrusted_json(ok, "t").is_array());
  const std::string deep = "[" + ok + "]";
  EXPECT_LOOM_ERROR(parse_untrusted_json(deep, "f.st: header"),
                    "f.st: header: JSON nested deeper than 64 levels");
  // 100,000 levels of objects, refused as quickly.
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  EXPECT_LOOM_ERROR(parse_untrusted_json(objects + "0" + std::string(100000, '}'), "t"),
                    "nested deeper");
}

TEST(UntrustedJson, AKeyMayRepeatOnlyInAnotherObject) {
  EXPECT_EQ(parse_untrusted_json(R"({"a":{"a":1},"b":[{"a":2},{"a":3}]})", "t")["b"][1]["a"], 3);
  EXPECT_LOOM_ERROR(parse_untrusted_json(R"({"a":1,"b":{"c":1},"a":2})", "t"),
                    "t: duplicate key \"a\"");
  EXPECT_LOOM_ERROR(parse_untrusted_json(R"([{"x":{"k":1,"k":1}}])", "t"), "duplicate key \"k\"");
}

TEST(UntrustedJson, ExcerptsAreShortAndPrintable) {
  EXPECT_EQ(excerpt("short"), "short");
  EXPECT_EQ(excerpt("a\x1b[31mb\n"), "a?[31mb?");
  const std::string cut = excerpt(std::string(1000, 'x'));
  EXPECT_EQ(cut, std::string(kMaxExcerpt, 'x') + "... (1000 bytes)");
  // A two-byte character across the cut is left out whole.
  const std::string accents = excerpt(std::string(kMaxExcerpt - 1, 'x') + "\xc3\xa9" + "yyy");
  EXPECT_EQ(accents, std::string(kMaxExcerpt - 1, 'x') + "... (" + std::to_string(kMaxExcerpt + 4) +
                         " bytes)");
  EXPECT_EQ(json_excerpt(json("s")), "\"s\"");
  EXPECT_LT(json_excerpt(json(std::vector<int>(10000, 7))).size(), 120u);
  // A parse error quotes the token it stopped in: only an excerpt of it.
  try {
    parse_untrusted_json("[\"" + std::string(100000, 'x') + "\x01\"]", "t");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u) << std::string(e.what()).substr(0, 500);
    EXPECT_NE(std::string(e.what()).find("t: malformed JSON"), std::string::npos) << e.what();
  }
}

TEST(UntrustedJson, MembersAreReadStrictly) {
  const json j = parse_untrusted_json(
      R"({"n":3,"f":3.5,"g":3.0,"neg":-1,"big":18446744073709551615,"s":"3","b":true,"x":1e300})",
      "t");
  const JsonObject c(j, "f.st: spec");
  EXPECT_EQ(c.integer("n", 1, 10), 3);
  EXPECT_EQ(c.integer("absent", 1, 10, 7), 7);
  EXPECT_LOOM_ERROR(c.integer("f", 1, 10),
                    "f.st: spec: \"f\" must be an integer in [1, 10], got 3.5");
  EXPECT_LOOM_ERROR(c.integer("g", 1, 10), "got 3.0");
  EXPECT_LOOM_ERROR(c.integer("neg", 0, 10), "got -1");
  EXPECT_LOOM_ERROR(c.integer("n", 4, 10), "in [4, 10], got 3");
  EXPECT_LOOM_ERROR(c.integer("big", 0, std::numeric_limits<int64_t>::max()),
                    "got 18446744073709551615");
  EXPECT_EQ(c.unsigned_integer("big"), std::numeric_limits<uint64_t>::max());
  EXPECT_LOOM_ERROR(c.unsigned_integer("neg"), "\"neg\" must be an integer in [0, ");
  EXPECT_LOOM_ERROR(c.integer("s", 1, 10), "got \"3\"");
  EXPECT_LOOM_ERROR(c.integer("b", 0, 1), "got true");
  EXPECT_LOOM_ERROR(c.integer("missing", 0, 1), "f.st: spec: missing \"missing\"");
  EXPECT_EQ(c.number("f"), 3.5);
  EXPECT_EQ(c.number("n"), 3.0);
  EXPECT_EQ(c.number("x"), 1e300);
  EXPECT_LOOM_ERROR(c.number("s"), "must be a finite number");
  EXPECT_LOOM_ERROR(c.boolean("n", false), "must be true or false");
  EXPECT_TRUE(c.boolean("b", false));
  EXPECT_EQ(c.string("s"), "3");
  EXPECT_LOOM_ERROR(c.string("n"), "must be a string, got 3");
  EXPECT_LOOM_ERROR(JsonObject(j["n"], "f.st: spec"), "f.st: spec: expected a JSON object, got 3");
  // nlohmann refuses numbers beyond double's range, so JSON never yields inf or NaN.
  EXPECT_LOOM_ERROR(parse_untrusted_json("[1e999]", "t"), "t: malformed JSON");
}

}  // namespace
}  // namespace loom::nn
