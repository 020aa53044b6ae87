// JSON attnforge did not write is parsed with limits: too large or too deeply
// nested is a clear error naming what was being read.
#include "schedules/bounded_json.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace attnforge::schedules {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_bounded_json(text, "schedule");
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(BoundedJson, ParsesOrdinaryDocuments) {
  EXPECT_EQ(parse_bounded_json(R"({"a": [1, {"b": "[[[{{{"}]})", "x")["a"][1]["b"], "[[[{{{");
}

TEST(BoundedJson, DeepNestingIsRejectedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(error_of(deep).find("nested deeper than 16"), std::string::npos);
  EXPECT_EQ(error_of(std::string(16, '[') + std::string(16, ']')), "");
}

TEST(BoundedJson, HugeDocumentsAndNonJsonAreRejected) {
  EXPECT_NE(error_of("\"" + std::string(kMaxJsonBytes, 'x') + "\"").find("at most"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("schedule: not JSON"), std::string::npos);
}

}  // namespace
}  // namespace attnforge::schedules
