// Report writers: JSON keys and versions, JUnit structure and escaping, exit codes.
#include "placement/program_builder.h"
#include "shardgate/residency_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sg {
namespace {

using test::ProgramBuilder;

ShardCheck sample_check(const std::string& path, double min_pct) {
  ProgramBuilder b;
  b.input("x", DType::kF16, {1, 8});
  b.op("relu", {{"y", DType::kF16, {1, 8}}}, {{"x", {"x"}}});
  b.op("topk", {{"v", DType::kF16, {1, 2}}, {"i", DType::kI32, {1, 2}}}, {{"x", {"y"}}});
  ShardCheckOptions options;
  options.threshold = ResidencyThreshold{min_pct, "test", ""};
  options.checks.push_back(*parse_contract_check("dims"));
  return check_program(path, b.program, {}, std::string(64, 'f'), options);
}

TEST(ResidencyReport, JsonCarriesVersionVerdictsAndOpRows) {
  ResidencyReport report;
  report.tool_version = "t";
  report.shards.push_back(sample_check("a/<x>&.mlmodelc", 50));
  report.shards.push_back(sample_check("b.mlmodelc", 100));
  auto j = nlohmann::json::parse(residency_report_json(report));
  EXPECT_EQ(j["schema_version"], kResidencyReportSchemaVersion);
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["counts"]["passed"], 1);
  EXPECT_EQ(j["counts"]["failed"], 1);
  const auto& s0 = j["shards"][0];
  EXPECT_EQ(s0["verdict"], "pass");
  EXPECT_EQ(s0["summary"]["compute_ops"], 2);
  EXPECT_DOUBLE_EQ(s0["summary"]["residency_pct"].get<double>(), 50.0);
  EXPECT_EQ(s0["gate"]["min_residency_pct"], 50.0);
  EXPECT_EQ(s0["checks"][0]["name"], "dims");
  const auto& topk = s0["ops"][1];
  EXPECT_EQ(topk["function"], "main");
  EXPECT_EQ(topk["block_path"], nlohmann::json::array({-1}));
  EXPECT_EQ(topk["index"], 1);
  EXPECT_EQ(topk["outputs"], nlohmann::json::array({"v", "i"}));
  EXPECT_EQ(topk["rule"], "R13");
  EXPECT_EQ(topk["placement"], "CPU");
  EXPECT_EQ(topk["source"], "predicted");
  EXPECT_EQ(topk["class"], "compute");
  EXPECT_EQ(j["shards"][1]["gate"]["passed"], false);
  // Deterministic: the same report renders identically.
  EXPECT_EQ(residency_report_json(report), residency_report_json(report));
}

TEST(ResidencyReport, JunitEscapesAndCountsFailures) {
  ResidencyReport report;
  report.shards.push_back(sample_check("a/<x>&.mlmodelc", 50));
  report.shards.push_back(sample_check("b.mlmodelc", 100));
  std::string xml = residency_report_junit(report);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"a/&lt;x&gt;&amp;.mlmodelc\""), std::string::npos);
  EXPECT_EQ(xml.find("<x>"), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"residency 50.00% &lt; 100%"), std::string::npos) << xml;
}

TEST(ResidencyReport, ExitCodes) {
  ResidencyReport report;
  EXPECT_EQ(residency_exit_code(report), kExitBadInput);  // nothing checked
  report.shards.push_back(sample_check("a.mlmodelc", 50));
  EXPECT_EQ(residency_exit_code(report), kExitPass);
  report.shards.push_back(sample_check("b.mlmodelc", 100));
  EXPECT_EQ(residency_exit_code(report), kExitGateFailed);
  ShardCheck broken;
  broken.path = "c.mlmodelc";
  broken.error = Status(ErrorCode::kFormat, "c.mlmodelc/model.mil:3:1: bad");
  report.shards.push_back(broken);
  EXPECT_EQ(residency_exit_code(report), kExitBadInput);
  EXPECT_STREQ(shard_verdict(report.shards.back()), "error");
  auto j = nlohmann::json::parse(residency_report_json(report));
  EXPECT_EQ(j["shards"][2]["error"]["code"], error_code_name(ErrorCode::kFormat));
  EXPECT_NE(residency_report_markdown(report).find("model.mil:3:1"), std::string::npos);
}

TEST(ResidencyReport, SummaryLineAndOpTable) {
  ShardCheck c = sample_check("x.mlmodelc", 100);
  std::string line = residency_summary_line(c);
  EXPECT_EQ(line.rfind("FAIL", 0), 0u);
  EXPECT_NE(line.find("compute 2, on ANE 1"), std::string::npos) << line;
  EXPECT_NE(line.find("residency 50.0%"), std::string::npos);
  EXPECT_NE(line.find("predicted"), std::string::npos);
  std::string table = residency_op_table(c);
  EXPECT_NE(table.find("R13"), std::string::npos);
  EXPECT_NE(residency_failure_lines(c).find("R13 x1: topk 'v'"), std::string::npos);
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

// Every report form names each rule's confidence and source (R13: U, "rf-detr PR #1495 ...";
// the relu is R6 raised by the G5 small-graph overlay), and the model verdict with its counts.
TEST(ResidencyReport, EveryFormCarriesRuleConfidenceAndSource) {
  ResidencyReport report;
  report.shards.push_back(sample_check("a.mlmodelc", 50));
  const std::string r13_source(find_rule("R13")->source);
  const std::string g5_source(find_rule("G5")->source);

  auto j = nlohmann::json::parse(residency_report_json(report));
  const auto& s0 = j["shards"][0];
  EXPECT_EQ(s0["model_verdict"], "fail");
  EXPECT_EQ(s0["summary"]["body_off_ane"], 1);
  EXPECT_EQ(s0["summary"]["body_at_risk"], 1);
  EXPECT_EQ(s0["ops"][1]["rule_confidence"], "U");
  EXPECT_EQ(s0["ops"][1]["rule_source"], r13_source);
  EXPECT_EQ(s0["ops"][0]["rule"], "R6");
  EXPECT_EQ(s0["ops"][0]["overlay_rule"], "G5");
  bool g5_listed = false;
  for (const auto& r : s0["rules"]) {
    if (r["id"] == "G5") {
      g5_listed = true;
      EXPECT_EQ(r["confidence"], "U");
      EXPECT_EQ(r["source"], g5_source);
    }
  }
  EXPECT_TRUE(g5_listed);

  const std::string md = residency_report_markdown(report);
  EXPECT_NE(md.find("| R13 | 1 | CPU | U | " + r13_source + " |"), std::string::npos) << md;
  EXPECT_NE(md.find("| a.mlmodelc | fail | 0 | 1 | 1 | 0 |"), std::string::npos) << md;

  const std::string xml = residency_report_junit(report);
  EXPECT_NE(xml.find("rule R13 x1: CPU (confidence U; source: " + r13_source + ")"),
            std::string::npos)
      << xml;

  const std::string table = residency_op_table(report.shards[0]);
  EXPECT_NE(table.find("R6+G5"), std::string::npos) << table;
  EXPECT_NE(table.find("U+U"), std::string::npos) << table;
  EXPECT_NE(table.find(r13_source), std::string::npos) << table;
}

}  // namespace
}  // namespace sg
