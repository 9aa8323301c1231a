// The project's JSON reader (include/rabbit/io/json.hpp): NaN/Infinity, \u escapes with surrogate
// pairs, member order, and exceptions on malformed text or a missing key.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "rabbit/io/json.hpp"

namespace rabbit {
namespace {

using io::Json;

// The JSON reader (rabbit/io/json.hpp) on what Python's json module writes.
TEST(JsonParser, ReadsWhatPythonsJsonModuleWrites) {
  const Json j = Json::parse(
      R"({"a": [1, 2.5e-3, -0.1, NaN, -Infinity], "b": {"x": true, "y": null}, "s": "\u00e9\ud83d\ude00\n"})");
  EXPECT_EQ(j.at("a")[1].number(), 2.5e-3);
  EXPECT_EQ(j.at("a")[2].number(), -0.1);
  EXPECT_TRUE(std::isnan(j.at("a")[3].number()));
  EXPECT_EQ(j.at("a")[4].number(), -INFINITY);
  EXPECT_TRUE(j.at("b").at("x").boolean());
  EXPECT_TRUE(j.at("b").at("y").is_null());
  EXPECT_EQ(j.at("s").string(), "\xC3\xA9\xF0\x9F\x98\x80\n");
  EXPECT_EQ(j.at("b").object()[0].first, "x");  // members keep file order
  EXPECT_THROW(Json::parse("{\"a\": }"), std::runtime_error);
  EXPECT_THROW(j.at("missing"), std::runtime_error);
}

}  // namespace
}  // namespace rabbit
