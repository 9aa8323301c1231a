// Upstream's results as JSON (reference_json_tree): a histogram of Double storage holds no variances,
// although tools/make_reference.py records the variances boost-histogram reads back (its values); one
// of Weight storage, or of a file written before the storage was recorded, keeps them.
#include <gtest/gtest.h>

#include "rabbit/compare/result_tree.hpp"
#include "rabbit/io/json.hpp"

namespace rabbit::compare {
namespace {

std::vector<double> variances_of(const std::string& storage_field) {
  const std::string text = R"({"data_obs": {"h": {"axes": [{"name": "x", "edges": [0, 1, 2]}], )" +
                           storage_field + R"("values": [3, 4], "variances": [3, 4]}}})";
  const auto tree = reference_json_tree(io::Json::parse(text), "test");
  return tree->load("results", "h").hist.variances;
}

TEST(ReferenceJsonStorage, DoubleStorageHoldsNoVariances) {
  EXPECT_TRUE(variances_of(R"("storage": "Double", )").empty());
  EXPECT_EQ(variances_of(R"("storage": "Weight", )"), (std::vector<double>{3, 4}));
  EXPECT_EQ(variances_of(""), (std::vector<double>{3, 4}));
}

}  // namespace
}  // namespace rabbit::compare
