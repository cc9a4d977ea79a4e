// Report writers: JSON keys and versions, JUnit structure and escaping, exit codes.
#include "placement/program_builder.h"
#include "shardgate/residency_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <memory>

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
  EXPECT_EQ(j["schema_version"], "shardgate/ane-report@3");
  EXPECT_EQ(j["tool"]["name"], "ane-validator");
  EXPECT_EQ(j["provenance"]["shards"].size(), 2u);
  EXPECT_EQ(j["provenance"]["shards"][0]["path"], "a/<x>&.mlmodelc");
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

// An fp32-I/O shard measured on an M1-class Mac: the plan puts both boundary casts on the CPU
// and every body op on the ANE. Residency is over the body (issue 8 item 2): 100 %, band
// 100-100 %, the default gate passes, the casts are reported apart. Counting the casts (as
// before) gave 33.3 % of 3 compute ops and failed the gate on two I/O conversions.
ShardCheck boundary_cast_check() {
  ProgramBuilder b;
  b.input("x", DType::kF32, {1, 8});
  b.op("cast", {{"x16", DType::kF16, {1, 8}}}, {{"x", {"x"}}});
  b.op("relu", {{"y", DType::kF16, {1, 8}}}, {{"x", {"x16"}}});
  b.op("cast", {{"out", DType::kF32, {1, 8}}}, {{"x", {"y"}}});
  b.output("out");
  auto plan = std::make_shared<ComputePlanDump>();
  plan->filename = "m1.json";
  plan->functions = {"main"};
  for (const auto& [out, type, device] : std::vector<std::array<std::string, 3>>{
           {"x16", "cast", "cpu"}, {"y", "relu", "ane"}, {"out", "cast", "cpu"}}) {
    PlanOp op;
    op.function = "main";
    op.block_path = {-1};
    op.output = out;
    op.operator_type = type;
    op.preferred = device;
    op.supported = std::vector<std::string>{device};
    op.cost = type == "cast" ? 0.4 : 0.2;
    plan->ops.push_back(op);
  }
  ShardCheckOptions options;
  options.plan = plan;
  options.plan_path = "m1.json";
  return check_program("io32.mlpackage", b.program, {}, std::string(64, 'f'), options);
}

TEST(ResidencyReport, ResidencyIsOverTheBodyWithBoundaryCastsApartInEveryForm) {
  ShardCheck c = boundary_cast_check();
  ASSERT_FALSE(c.error) << c.error->to_string();
  EXPECT_EQ(c.summary.compute_ops, 3);
  EXPECT_EQ(c.summary.boundary_casts, 2);
  EXPECT_EQ(c.summary.boundary_casts_not_ane, 2);
  EXPECT_EQ(c.summary.body_ops, 1);
  ASSERT_TRUE(c.summary.residency_pct && c.summary.residency_low_pct && c.summary.cost_weighted_pct);
  EXPECT_DOUBLE_EQ(*c.summary.residency_pct, 100.0);
  EXPECT_DOUBLE_EQ(*c.summary.residency_low_pct, 100.0);
  EXPECT_DOUBLE_EQ(*c.summary.cost_weighted_pct, 100.0);  // the casts' cost is apart too
  EXPECT_TRUE(c.verdict.passed) << (c.verdict.failures.empty() ? "" : c.verdict.failures[0]);
  EXPECT_EQ(c.model_verdict, ModelVerdict::kAtRisk);  // casts off the ANE: at risk, not pass

  ResidencyReport report;
  report.shards.push_back(c);
  auto j = nlohmann::json::parse(residency_report_json(report));
  const auto& s = j["shards"][0]["summary"];
  EXPECT_EQ(s["residency_scope"], "body");
  EXPECT_DOUBLE_EQ(s["residency_pct"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(s["residency_low_pct"].get<double>(), 100.0);
  EXPECT_EQ(s["body_ops"], 1);
  EXPECT_EQ(s["boundary_casts"], 2);
  EXPECT_EQ(s["boundary_casts_not_ane"], 2);

  const std::string line = residency_summary_line(c);
  EXPECT_NE(line.find("boundary casts 2 apart, 2 not on ANE"), std::string::npos) << line;
  EXPECT_NE(line.find("residency 100.0% of 1 body ops"), std::string::npos) << line;
  EXPECT_NE(line.find("band 100.0-100.0%"), std::string::npos) << line;

  const std::string xml = residency_report_junit(report);
  EXPECT_NE(xml.find("failures=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("residency 100.0% of 1 body ops"), std::string::npos) << xml;

  const std::string md = residency_report_markdown(report);
  EXPECT_NE(md.find("| io32.mlpackage | pass | 3 | 1 | 0 | 2 | 0 | 0 | 1 | 100.0% | 100% | plan |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| io32.mlpackage | at risk | 1 | 0 | 0 | 2 | 100.0-100.0% |  |"),
            std::string::npos)
      << md;
}

TEST(ResidencyReport, JunitEscapesAndCountsFailures) {
  ResidencyReport report;
  report.shards.push_back(sample_check("a/<x>&.mlmodelc", 50));
  report.shards.push_back(sample_check("b.mlmodelc", 100));
  std::string xml = residency_report_junit(report);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"a/&lt;x&gt;&amp;.mlmodelc\""), std::string::npos);
  EXPECT_EQ(xml.find("<x>"), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"residency 50.00% of the body &lt; 100%"), std::string::npos) << xml;
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
