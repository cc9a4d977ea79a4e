// metrics.def is the one list of fidelity metrics: every place that names metrics derives from
// it, so a row added there is a gate key, an option, a range and a regression quantity at once.
#include "shardgate/fidelity.h"
#include "shardgate/gate_policy.h"
#include "shardgate/report_diff.h"
#include "support/cli_run.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

namespace sg {
namespace {

TEST(MetricTable, RowsAreDistinctAndInEnumOrder) {
  std::set<std::string> names, keys, flags;
  for (size_t i = 0; i < kMetricCount; ++i) {
    const MetricInfo& m = metric_table()[i];
    EXPECT_EQ(static_cast<size_t>(m.metric), i) << m.name;
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    EXPECT_TRUE(keys.insert(m.gate_key).second) << m.gate_key;
    EXPECT_TRUE(flags.insert(m.flag).second) << m.flag;
    EXPECT_EQ(metric_from_name(m.name), m.metric);
    EXPECT_STREQ(metric_name(m.metric), m.name);
    EXPECT_LE(m.range_lo, m.range_hi) << m.name;
  }
  EXPECT_EQ(names.size(), 8u);
}

// Every gate key is read from a gate file; a bound outside the row's range is refused with the
// row's reason; the same bound inside it is accepted.
TEST(MetricTable, EveryGateKeyIsReadAndRangeChecked) {
  for (const MetricInfo& m : metric_table()) {
    const std::string value = m.metric == Metric::kNormRatio ? "[0.5, 2]" : "0.5";
    const std::string ok = std::string(R"({"schema": "shardgate/fidelity-gate@1", "defaults": {")") + m.gate_key +
                           R"(": {"value": )" + value + R"(, "reason": "test"}}})";
    auto policy = parse_gate_policy(ok, "g.json");
    ASSERT_TRUE(policy.is_ok()) << m.gate_key << ": " << policy.status().to_string();
    EXPECT_TRUE(policy->defaults.at(m.metric).has_value()) << m.gate_key;
    if (m.metric == Metric::kNormRatio || m.range_lo == -std::numeric_limits<double>::infinity()) continue;
    const double outside = m.range_lo - 1;
    const std::string bad = std::string(R"({"schema": "shardgate/fidelity-gate@1", "defaults": {")") + m.gate_key +
                            R"(": {"value": )" + std::to_string(outside) + R"(, "reason": "test"}}})";
    auto refused = parse_gate_policy(bad, "g.json");
    ASSERT_FALSE(refused.is_ok()) << m.gate_key;
    EXPECT_NE(refused.status().message().find(m.range_text), std::string::npos) << refused.status().message();
  }
}

// Every metric has its option on the comparing commands, and is a regression quantity.
class MetricTableCli : public testing::TempDirTest {
 protected:
  MetricTableCli() : TempDirTest("sg_metric_table_") {}
};

TEST_F(MetricTableCli, EveryMetricHasItsOptionAndItsRegressionTolerance) {
  const CliRun help = run_command(SG_BINARY_DIR "/validators/golden-validator run --help");
  std::string tolerances;
  for (const MetricInfo& m : metric_table()) {
    EXPECT_NE(help.output.find(m.flag), std::string::npos) << m.flag;
    EXPECT_NE(help.output.find(m.help), std::string::npos) << m.help;
    tolerances += std::string(tolerances.empty() ? "" : ", ") + "\"" + m.name + R"(": {"value": 0.1, "reason": "x"})";
  }
  const std::string gate = (dir_ / "regression.json").string();
  std::ofstream(gate) << R"({"schema": "shardgate/regression-gate@1", "tolerances": {)" << tolerances << "}}";
  auto policy = load_regression_policy(gate);
  ASSERT_TRUE(policy.is_ok()) << policy.status().to_string();
  EXPECT_EQ(policy->tolerances.size(), kMetricCount);
}

}  // namespace
}  // namespace sg
