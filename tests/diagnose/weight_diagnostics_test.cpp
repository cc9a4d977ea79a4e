// Weight diagnostics (runtime/diagnose/) against the numpy/coremltools oracle
// (tests/generators/make_weight_diagnostics_oracle.py -> tests/data/diagnose/), the flags on
// the bundled sample chains, and the report forms.
#include "shardgate/io.h"
#include "shardgate/shard.h"
#include "shardgate/weight_diagnostics.h"
#include "shardgate/weight_report.h"

#include "support/json_schema_lite.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

namespace sg {
namespace {
using sg::testing::source_path;

std::shared_ptr<Shard> open_or_die(const std::string& path) {
  auto s = Shard::open(path);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? *s : nullptr;
}

void expect_close(double expected, double actual, const std::string& what) {
  const double tol = 1e-6 * std::max(1.0, std::fabs(expected));
  EXPECT_NEAR(expected, actual, tol) << what;
}

TEST(WeightDiagnostics, MatchesTheNumpyOracleOnEveryForm) {
  auto text = read_file(source_path("tests/data/diagnose/expected_weight_stats.json"));
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  const auto oracle = nlohmann::json::parse(*text);
  int64_t compared = 0, coded = 0, with_baseline = 0;
  for (const auto& [path, model] : oracle["models"].items()) {
    auto shard = open_or_die(source_path(path));
    ASSERT_NE(shard, nullptr) << path;
    std::shared_ptr<Shard> base;
    if (!model["baseline"].is_null())
      base = open_or_die(source_path(model["baseline"].get<std::string>()));
    auto r = diagnose_weights(*shard, base.get());
    ASSERT_TRUE(r.is_ok()) << path << ": " << r.status().message();
    std::map<std::string, const WeightDiagnostic*> mine;
    for (const WeightDiagnostic& w : r->weights) mine[w.function + "/" + w.name] = &w;
    ASSERT_EQ(mine.size(), model["weights"].size()) << path;
    for (const auto& e : model["weights"]) {
      const std::string id = e["function"].get<std::string>() + "/" + e["name"].get<std::string>();
      ASSERT_TRUE(mine.count(id)) << path << ": " << id;
      const WeightDiagnostic& w = *mine[id];
      const std::string at = path + ": " + id;
      EXPECT_EQ(w.key, e["key"]) << at;
      EXPECT_EQ(w.op_type, e["op_type"]) << at;
      EXPECT_EQ(w.elements, e["elements"].get<int64_t>()) << at;
      EXPECT_EQ(w.code_bits, e["code_bits"].get<int>()) << at;
      expect_close(e["rms"], w.rms, at + " rms");
      expect_close(e["outlier_ratio"], w.outlier_ratio, at + " outlier_ratio");
      expect_close(e["tensor_outlier_ratio"], w.tensor_outlier_ratio, at + " tensor_outlier_ratio");
      if (w.code_bits > 0) {
        ++coded;
        EXPECT_EQ(w.groups, e["groups"].get<int64_t>()) << at;
        EXPECT_EQ(w.group_elements, e["group_elements"].get<int64_t>()) << at;
        EXPECT_EQ(w.outlier_group, e["outlier_group"].get<int64_t>()) << at;
        expect_close(e["effective_bits"], w.effective_bits, at + " effective_bits");
        expect_close(e["codes_used"], w.codes_used, at + " codes_used");
        if (e.contains("est_rel_error")) {
          expect_close(e["est_rel_error"], w.est_rel_error, at + " est_rel_error");
          expect_close(e["typical_steps"], w.typical_codes, at + " typical_steps");
          expect_close(e["step_min"], w.step_min, at + " step_min");
          expect_close(e["step_median"], w.step_median, at + " step_median");
          expect_close(e["step_max"], w.step_max, at + " step_max");
        } else {
          EXPECT_TRUE(std::isnan(w.est_rel_error)) << at << ": palettes have no step";
        }
      }
      if (e.contains("rel_error")) {
        ++with_baseline;
        ASSERT_TRUE(w.has_baseline) << at << ": " << w.baseline_name;
        expect_close(e["rel_error"], w.rel_error, at + " rel_error");
        expect_close(e["sqnr_db"], w.sqnr_db, at + " sqnr_db");
      }
      ++compared;
    }
  }
  // Every weight of the oracle file was reached: 46, of which 44 have codes (a cast and a vector
  // palette have none) and 16 (the sample pairs) a baseline.
  EXPECT_EQ(compared, 46);
  EXPECT_EQ(coded, 44);
  EXPECT_EQ(with_baseline, 16);
}

std::map<std::string, std::vector<std::string>> flags_of_chain(const std::string& variant) {
  std::map<std::string, std::vector<std::string>> out;
  int shards = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_path("goldens/sample/shards"))) {
    const std::string name = e.path().filename().string();
    if (name.find("_" + variant + ".") == std::string::npos) continue;
    ++shards;
    auto shard = open_or_die(e.path().string());
    std::string base_path = e.path().string();
    base_path.replace(base_path.rfind(variant), variant.size(), "fp16");
    auto base = open_or_die(base_path);
    auto r = diagnose_weights(*shard, base.get());
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    if (!r.is_ok()) continue;
    for (const WeightDiagnostic& w : r->weights) {
      EXPECT_TRUE(w.has_baseline) << name << " " << w.key << ": " << w.baseline_name;
      for (const WeightFlag& f : w.flags) out[name + " " + w.key].push_back(f.id);
    }
  }
  EXPECT_GT(shards, 10) << variant;
  return out;
}

// The case: the INT8 sample chain's per-tensor scales of the heavy-tailed expert banks
// are set by their outliers; the LUT4 chain (a table per 32 rows) has no such flag.
TEST(WeightDiagnostics, FlagsOutlierScalesOnTheInt8ChainAndNothingOnLut4) {
  const auto int8 = flags_of_chain("int8");
  int gate_up = 0;
  for (const auto& [where, ids] : int8) {
    EXPECT_EQ(ids, std::vector<std::string>{"outlier_scale"}) << where;
    if (where.find("experts_gate.weight") != std::string::npos ||
        where.find("experts_up.weight") != std::string::npos) {
      ++gate_up;
    }
  }
  // Every MoE pack (4 layers x 2 packs) flags both its gate and its up bank.
  EXPECT_EQ(gate_up, 16);
  const auto lut4 = flags_of_chain("lut4");
  EXPECT_TRUE(lut4.empty()) << lut4.begin()->first;
}

// The flag checks on their thresholds (runtime/diagnose/README.md, "Flags"): each fires just
// above and stays silent just below.
TEST(WeightDiagnostics, FlagChecksFireOnTheirThresholds) {
  WeightDiagnostic w;
  w.code_bits = 8;
  w.group_elements = 256;
  w.step_median = 0.01;
  w.outlier_ratio = 10.0;
  w.est_rel_error = 0.05;
  w.effective_bits = 2.0;
  auto ids = [](const WeightDiagnostic& d) {
    std::vector<std::string> out;
    for (const WeightFlag& f : weight_flags_for(d)) out.push_back(f.id);
    return out;
  };
  EXPECT_EQ(ids(w), std::vector<std::string>{"outlier_scale"});
  WeightDiagnostic small = w;
  small.group_elements = 255;  // a block: the remedy, not the cause
  EXPECT_TRUE(ids(small).empty());
  WeightDiagnostic tame = w;
  tame.outlier_ratio = 9.9;
  EXPECT_TRUE(ids(tame).empty());
  WeightDiagnostic precise = w;
  precise.est_rel_error = 0.049;
  EXPECT_TRUE(ids(precise).empty());
  WeightDiagnostic palette = w;
  palette.step_median = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(ids(palette).empty());

  WeightDiagnostic b;
  b.has_baseline = true;
  b.baseline_name = "w_ref";
  b.rel_error = 0.3;
  b.sqnr_db = 10.46;
  EXPECT_EQ(ids(b), std::vector<std::string>{"baseline_error"});
  EXPECT_EQ(weight_flags_for(b)[0].message, "relative error 0.300 against the baseline's 'w_ref' (SQNR 10.5 dB)");
  // At 1 or more: no closer than zeros, so the message asks whether it is the right baseline.
  WeightDiagnostic other = b;
  other.rel_error = 1.413;
  other.sqnr_db = -3.0;
  EXPECT_EQ(weight_flags_for(other)[0].message,
            "relative error 1.413 against the baseline's 'w_ref' (SQNR -3.0 dB), no closer to it "
            "than zeros: not the weight this one was converted from? (another layer or model "
            "given as the baseline)");
  b.rel_error = 0.29;
  EXPECT_TRUE(ids(b).empty());
  b.has_baseline = false;
  b.rel_error = 0.9;
  EXPECT_TRUE(ids(b).empty()) << "no baseline, no measured error";
}

TEST(WeightDiagnostics, ReportFormsAgreeAndTheJsonFollowsItsSchema) {
  auto shard = open_or_die(source_path("goldens/sample/shards/L0_moe_p0_int8.mlpackage"));
  auto base = open_or_die(source_path("goldens/sample/shards/L0_moe_p0_fp16.mlpackage"));
  auto r = diagnose_weights(*shard, base.get());
  ASSERT_TRUE(r.is_ok());
  WeightReport report;
  report.tool_version = "test";
  report.shards.push_back(*r);
  ASSERT_EQ(report.flagged(), 2);
  EXPECT_EQ(report.verdict(), "flagged");
  auto schema = read_file(source_path("reports/schema/weight-diagnostics.schema.json"));
  ASSERT_TRUE(schema.is_ok());
  const std::string json = weight_report_json(report);
  EXPECT_EQ(testing::json_schema_violations(*schema, json), std::vector<std::string>{});
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["summary"]["flagged"], 2);
  EXPECT_EQ(j["shards"][0]["fingerprint"], r->fingerprint);
  EXPECT_EQ(j["shards"][0]["baseline"]["fingerprint"], r->baseline_fingerprint);
  const std::string junit = weight_report_junit(report);
  EXPECT_NE(junit.find("tests=\"4\" failures=\"2\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<failure type=\"outlier_scale\""), std::string::npos);
  const std::string md = weight_report_markdown(report);
  EXPECT_NE(md.find("`experts_gate.weight`"), std::string::npos) << md;  // the key as it is, in a code span
  const std::string table = weight_report_table(report, false);
  EXPECT_NE(table.find("outlier_scale: one scale per 16384 weights"), std::string::npos) << table;
  EXPECT_EQ(table.find("router.weight"), std::string::npos) << "unflagged weights listed without --all";
}

}  // namespace
}  // namespace sg
