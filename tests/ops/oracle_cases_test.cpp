// Runs every oracle case of tests/data/ops/*/cases.json (expected values computed by numpy,
// see the gen_<family>.py script beside each file) through the op harness.
#include "support/op_cases.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace sg::testing {
namespace {

class OracleCases : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleCases, EveryCaseMatchesNumpy) {
  auto cases = load_op_cases(GetParam());
  ASSERT_TRUE(cases.is_ok()) << cases.status().to_string();
  EXPECT_FALSE(cases->empty()) << GetParam() << " holds no case";
  for (const OpCase& c : *cases) {
    const std::string failure = run_op_case(c);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

std::string family_name(const ::testing::TestParamInfo<std::string>& info) {
  return std::filesystem::path(info.param).parent_path().filename().string();
}

INSTANTIATE_TEST_SUITE_P(Families, OracleCases, ::testing::ValuesIn(find_op_case_files()),
                         family_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OracleCases);

}  // namespace
}  // namespace sg::testing
