// golden-validator diff: regressions between two reports of one tool, planted and real.
#include "shardgate/io.h"

#include "support/cli_run.h"
#include "support/json_schema_lite.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace sg {
namespace {

namespace fs = std::filesystem;

class GoldenDiffCli : public testing::TempDirTest {
 protected:
  GoldenDiffCli() : TempDirTest("sg_diff_") {}
  static CliRun golden(const std::string& args) { return run_golden_validator(args); }
  static nlohmann::json load(const std::string& path) {
    auto t = read_file(path);
    EXPECT_TRUE(t.is_ok()) << path;
    return nlohmann::json::parse(t.is_ok() ? *t : "{}");
  }
  static void save(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(1); }
  const std::string kGate = " --gate " SG_SOURCE_DIR "/gates/regression.json";
};

// The row of a saved check with the lowest cosine: (its index, its cosine).
std::pair<size_t, double> worst_cosine_row(const nlohmann::json& check) {
  double worst = 2;
  size_t at = 0;
  for (size_t i = 0; i < check["rows"].size(); ++i) {
    const double c = check["rows"][i]["values"]["cosine"].get<double>();
    if (c < worst) worst = c, at = i;
  }
  return {at, worst};
}

TEST_F(GoldenDiffCli, IdenticalReportsHaveNothingToSay) {
  ASSERT_EQ(golden("run goldens/sample/chains/chain_lut4.json -q --json " + out("a.json")).code, 0);
  const CliRun r = golden("diff " + out("a.json") + " " + out("a.json") + kGate);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("0 changed, 0 worse, 0 regression(s) -> no regression"), std::string::npos) << r.output;
}

// A regression planted in a report: one position of one layer loses 0.01 of cosine while the
// check still passes. diff names the check and the statistic, and exits 1; the same plant of
// 0.001 is within the 0.002 tolerance: listed as worse, exit 0.
TEST_F(GoldenDiffCli, CatchesAPlantedRegressionEvenWhenTheCheckStillPasses) {
  ASSERT_EQ(golden("run goldens/sample/chains/chain_lut4.json -q --json " + out("old.json")).code, 0);
  for (double drop : {0.01, 0.001}) {
    nlohmann::json j = load(out("old.json"));
    auto& check = j["checks"][2];
    const auto [at, worst] = worst_cosine_row(check);
    check["rows"][at]["values"]["cosine"] = worst - drop;
    save(out("new.json"), j);
    const CliRun r = golden("diff " + out("old.json") + " " + out("new.json") + kGate + " --json " + out("d.json"));
    const std::string id = check["shard"].get<std::string>() + "/" + check["id"].get<std::string>();
    if (drop > 0.002) {
      EXPECT_EQ(r.code, 1) << r.output;
      EXPECT_NE(r.output.find("REGRESSION " + id), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("cosine min"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("> tolerance 0.002 for cosine"), std::string::npos) << r.output;
    } else {
      EXPECT_EQ(r.code, 0) << r.output;
      EXPECT_NE(r.output.find("worse      " + id), std::string::npos) << r.output;
    }
    auto schema = read_file(SG_SOURCE_DIR "/reports/schema/report-diff.schema.json");
    ASSERT_TRUE(schema.is_ok());
    auto doc = read_file(out("d.json"));
    ASSERT_TRUE(doc.is_ok());
    EXPECT_EQ(testing::json_schema_violations(*schema, *doc), std::vector<std::string>{});
  }
}

// A drop just beyond the 0.002 tolerance printed "worse by 0.002 > tolerance 0.002": the change
// gets the digits that show it exceeds the tolerance.
TEST_F(GoldenDiffCli, AChangeJustBeyondItsToleranceReadsAsBeyondIt) {
  ASSERT_EQ(golden("run goldens/sample/chains/chain_lut4.json -q --json " + out("old.json")).code, 0);
  nlohmann::json j = load(out("old.json"));
  auto& check = j["checks"][2];
  const auto [at, worst] = worst_cosine_row(check);
  check["rows"][at]["values"]["cosine"] = worst - 0.0020000001;
  save(out("new.json"), j);
  const CliRun r = golden("diff " + out("old.json") + " " + out("new.json") + kGate);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("(worse by 0.0020000001 > tolerance 0.002 for cosine)"), std::string::npos)
      << r.output;
}

// A check that already fails and now overflows at one position: that row holds NaN and is
// skipped by the statistics (it fails on its own), so its verdict stayed "fail" and its cosine
// min rose from 0.958 to 0.965 on the finite rows: diff called it better and exited 0.
TEST_F(GoldenDiffCli, ARowThatTurnsNonFiniteIsARegressionEvenInAFailingCheck) {
  ASSERT_EQ(golden("run goldens/sample/chains/chain_int8.json -q --json " + out("old.json")).code, 1);
  nlohmann::json j = load(out("old.json"));
  auto& check = j["checks"][5];
  ASSERT_EQ(check["id"], "logits");
  ASSERT_EQ(check["verdict"], "fail");
  const auto [at, worst] = worst_cosine_row(check);
  auto& row = check["rows"][at];
  for (auto& [metric, value] : row["values"].items()) value = "nan";
  row["nonfinite"] = true;
  check["nonfinite"] = {{"tensor", "candidate"}, {"flat_index", 0}, {"position", row["position"]}, {"value", "inf"}};
  save(out("new.json"), j);
  const CliRun r = golden("diff " + out("old.json") + " " + out("new.json") + kGate + " --json " + out("d.json"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("REGRESSION head.concat/logits"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rows with NaN or Inf               0 -> 1  (more rows hold a non-finite "
                          "value: no tolerance admits one)"),
            std::string::npos) << r.output;
  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/report-diff.schema.json");
  auto doc = read_file(out("d.json"));
  ASSERT_TRUE(schema.is_ok() && doc.is_ok());
  EXPECT_EQ(testing::json_schema_violations(*schema, *doc), std::vector<std::string>{});
  // The other way round is better, not a regression.
  golden("diff " + out("new.json") + " " + out("old.json") + kGate + " --all --json " + out("back.json"));
  bool listed = false;
  const nlohmann::json back = load(out("back.json"));
  for (const auto& row : back["rows"]) {
    if (row["what"] != "rows with NaN or Inf") continue;
    listed = true;
    EXPECT_EQ(row["old"], "1");
    EXPECT_EQ(row["new"], "0");
    EXPECT_FALSE(row["regression"].get<bool>()) << row.dump();
  }
  EXPECT_TRUE(listed);
}

// A real regression: the per-tensor INT8 build against the LUT4 one (same checkpoints).
TEST_F(GoldenDiffCli, Int8AgainstLut4IsARegressionAtTheLogits) {
  ASSERT_EQ(golden("run goldens/sample/chains/chain_lut4.json -q --json " + out("lut4.json")).code, 0);
  ASSERT_EQ(golden("run goldens/sample/chains/chain_int8.json -q --json " + out("int8.json")).code, 1);
  const CliRun r = golden("diff " + out("lut4.json") + " " + out("int8.json") + kGate);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("verdict"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pass -> fail  (the check passed and now does not)"), std::string::npos) << r.output;
}

// The regression gate names the accepted report: diff with only the new one compares with it.
// Gate and baseline live in a repository of their own (found above the new report), the
// baseline path is relative to the gate file.
TEST_F(GoldenDiffCli, TheGateNamesTheBaselineWhenOnlyTheNewReportIsGiven) {
  fs::create_directories(dir_ / "repo" / ".git");
  fs::create_directories(dir_ / "repo" / "gates");
  fs::create_directories(dir_ / "repo" / "reports" / "accepted");
  const std::string baseline = (dir_ / "repo" / "reports" / "accepted" / "lut4.json").string();
  const std::string fresh = (dir_ / "repo" / "reports" / "int8.json").string();
  ASSERT_EQ(golden("run goldens/sample/chains/chain_lut4.json -q --json " + baseline).code, 0);
  ASSERT_EQ(golden("run goldens/sample/chains/chain_int8.json -q --json " + fresh).code, 1);
  nlohmann::json gate = load(SG_SOURCE_DIR "/gates/regression.json");
  const std::string gate_path = (dir_ / "repo" / "gates" / "regression.json").string();
  save(gate_path, gate);
  // No baseline named yet: a usage error that says how to name one.
  CliRun r = golden("diff " + fresh);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no old report"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(gate_path), std::string::npos) << r.output;
  gate["baseline"] = {{"report", "../reports/accepted/lut4.json"}, {"reason", "release 1.2, accepted"}};
  save(gate_path, gate);
  r = golden("diff " + fresh);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("baseline " + baseline + " (from " + gate_path + ": release 1.2, accepted)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("pass -> fail"), std::string::npos) << r.output;
  // The baseline against itself: nothing to say.
  EXPECT_EQ(golden("diff " + baseline).code, 0);
  // A baseline entry without its reason, or one naming a missing file, is refused naming it.
  gate["baseline"] = {{"report", "../reports/accepted/lut4.json"}};
  save(gate_path, gate);
  r = golden("diff " + fresh);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("baseline.reason is required"), std::string::npos) << r.output;
  gate["baseline"] = {{"report", "missing.json"}, {"reason", "x"}};
  save(gate_path, gate);
  r = golden("diff " + fresh);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find((dir_ / "repo" / "gates" / "missing.json").string()), std::string::npos) << r.output;
}

// ane-validator reports: an op planted off the ANE is a regression even when the shard's
// verdict does not change.
TEST_F(GoldenDiffCli, AnOpMovedOffTheAneIsARegression) {
  const std::string ane = std::string(SG_BINARY_DIR "/validators/ane-validator ");
  run_command(ane + "goldens/sample/shards/L0_attn_fp16.mlpackage -q --json " + out("old.json"));
  nlohmann::json j = load(out("old.json"));
  ASSERT_TRUE(j.contains("shards"));
  // The small sample shard's compute ops are predicted ANE_RISK (small-work floor G5).
  std::string moved, before;
  for (auto& op : j["shards"][0]["ops"]) {
    if (op["placement"] == "ANE" || op["placement"] == "ANE_RISK") {
      before = op["placement"].get<std::string>();
      op["placement"] = "CPU";
      moved = op["outputs"][0].get<std::string>();
      break;
    }
  }
  ASSERT_FALSE(moved.empty());
  save(out("new.json"), j);
  const CliRun r = golden("diff " + out("old.json") + " " + out("new.json") + kGate);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("main:" + moved), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("moved away from the ANE (" + before + " -> CPU"), std::string::npos) << r.output;
}

TEST_F(GoldenDiffCli, BadInputIsExitTwo) {
  ASSERT_EQ(golden("run goldens/sample/chains/chain_lut4.json -q --json " + out("g.json")).code, 0);
  run_command(std::string(SG_BINARY_DIR "/validators/ane-validator ") +
              "goldens/sample/shards/L0_attn_fp16.mlpackage -q --json " + out("a.json"));
  const CliRun mixed = golden("diff " + out("g.json") + " " + out("a.json") + kGate);
  EXPECT_EQ(mixed.code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find("diff compares reports of one tool"), std::string::npos) << mixed.output;
  save(out("gate.json"), {{"schema", "shardgate/regression-gate@1"},
                          {"tolerances", {{"cosine", {{"value", -1}, {"reason", "x"}}}}}});
  const CliRun neg = golden("diff " + out("g.json") + " " + out("g.json") + " --gate " + out("gate.json"));
  EXPECT_EQ(neg.code, 2) << neg.output;
  EXPECT_NE(neg.output.find("tolerances.cosine.value must be a number >= 0"), std::string::npos) << neg.output;
  save(out("gate.json"), {{"schema", "shardgate/regression-gate@1"},
                          {"tolerances", {{"cosin", {{"value", 0.1}, {"reason", "x"}}}}}});
  const CliRun typo = golden("diff " + out("g.json") + " " + out("g.json") + " --gate " + out("gate.json"));
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find("tolerances.cosin: unknown quantity"), std::string::npos) << typo.output;
  const CliRun missing = golden("diff " + out("nope.json") + " " + out("g.json") + kGate);
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("nope.json"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace sg
