// Golden reports: the JSON validates against reports/schema/golden-report.schema.json, carries
// the numpy-expected per-position values, round-trips through parse (regate), and the HTML,
// JUnit, Markdown and table renderings show what they promise.
#include "shardgate/golden.h"
#include "shardgate/gate_report.h"
#include "shardgate/golden_report.h"
#include "shardgate/io.h"
#include "shardgate/report_diff.h"
#include "support/json_schema_lite.h"
#include "support/text_count.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <regex>

namespace sg {
namespace {
using sg::testing::count;

using Json = nlohmann::json;

GoldenReport report_for(const std::string& candidate, GatePolicy policy = builtin_gate_policy()) {
  auto ref = open_golden_source(SG_TEST_DATA_DIR "/golden/ref");
  auto cand = open_golden_source(SG_TEST_DATA_DIR "/golden/" + candidate);
  EXPECT_TRUE(ref.is_ok() && cand.is_ok());
  auto run = compare_sources(**cand, **ref, {});
  EXPECT_TRUE(run.is_ok()) << run.status().to_string();
  auto report = make_golden_report(std::move(*run), std::move(policy), false, "test");
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  return std::move(*report);
}

std::string schema() {
  auto s = read_file(SG_SOURCE_DIR "/reports/schema/golden-report.schema.json");
  EXPECT_TRUE(s.is_ok());
  return s.is_ok() ? *s : std::string();
}

Json expected() {
  auto s = read_file(SG_TEST_DATA_DIR "/golden/expected.json");
  EXPECT_TRUE(s.is_ok());
  return Json::parse(*s);
}

TEST(GoldenReport, JsonFollowsTheSchemaAndHoldsNumpyValues) {
  const GoldenReport report = report_for("cand_fail");
  const std::string text = golden_report_json(report);
  EXPECT_EQ(testing::json_schema_violations(schema(), text), std::vector<std::string>{});
  const Json j = Json::parse(text);
  EXPECT_EQ(j["schema_version"], "shardgate/golden-report@2");
  EXPECT_EQ(j["verdict"], "fail");
  const Json e = expected();
  EXPECT_EQ(j["summary"]["first_failure"]["checkpoint"], e["cand_fail_first_failure"]["checkpoint"]);
  EXPECT_EQ(j["summary"]["first_failure"]["layer"], e["cand_fail_first_failure"]["layer"]);
  EXPECT_EQ(j["summary"]["first_failure"]["position"], e["cand_fail_first_failure"]["position"]);
  // Every per-position cosine and norm ratio equals numpy's (float64 on the same fp16 values).
  size_t compared = 0;
  for (const Json& check : j["checks"]) {
    const Json& want = e["cand_fail"][check["checkpoint"].get<std::string>()];
    ASSERT_EQ(check["rows"].size(), want["cosine"].size());
    for (size_t p = 0; p < check["rows"].size(); ++p) {
      EXPECT_NEAR(check["rows"][p]["values"]["cosine"].get<double>(), want["cosine"][p].get<double>(), 1e-12);
      EXPECT_NEAR(check["rows"][p]["values"]["norm_ratio"].get<double>(),
                  want["norm_ratio"][p].get<double>(), 1e-12);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 6u * 8u);
  // Every gated metric carries its threshold, reason and verdict.
  bool seen_cosine = false;
  for (const Json& m : j["checks"][0]["metrics"]) {
    if (m["metric"] == "cosine") {
      seen_cosine = true;
      EXPECT_EQ(m["threshold"], 0.97);
      EXPECT_FALSE(m["reason"].get<std::string>().empty());
      EXPECT_EQ(m["verdict"], "pass");
    }
  }
  EXPECT_TRUE(seen_cosine) << "the first check lists no cosine metric: " << j["checks"][0]["metrics"].dump();
}

TEST(GoldenReport, SchemaCheckerCatchesMissingFields) {
  Json j = Json::parse(golden_report_json(report_for("cand_pass")));
  j["checks"][0].erase("rows");
  j.erase("verdict");
  const auto v = testing::json_schema_violations(schema(), j.dump());
  EXPECT_EQ(v.size(), 2u);
}

TEST(GoldenReport, RegateRoundTripRecomputesTheSameVerdicts) {
  const GoldenReport report = report_for("cand_fail");
  const std::string text = golden_report_json(report);
  auto parsed = parse_golden_report_json(text, "r.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->run.checks.size(), report.run.checks.size());
  EXPECT_EQ(parsed->evaluation.summary.verdict, Verdict::kFail);
  EXPECT_EQ(parsed->evaluation.summary.first_failure_check, report.evaluation.summary.first_failure_check);
  // Writing the parsed report again gives the same document (values survive exactly).
  auto again = regate_report(*parsed, parsed->policy, false);
  ASSERT_TRUE(again.is_ok());
  again->tool_version = report.tool_version;
  Json a = Json::parse(text), b = Json::parse(golden_report_json(*again));
  EXPECT_EQ(a["checks"], b["checks"]);
  EXPECT_EQ(a["summary"], b["summary"]);

  // Looser thresholds: hidden.2 position 5 (0.646) and hidden.3 (0.916) pass at 0.6 with a wide
  // norm ratio range.
  GatePolicy loose = parsed->policy;
  loose.defaults.at(Metric::kCosine)->bound = 0.6;
  loose.defaults.at(Metric::kNormRatio)->upper = 2.0;
  auto passed = regate_report(*parsed, loose, false);
  ASSERT_TRUE(passed.is_ok());
  EXPECT_EQ(passed->evaluation.summary.verdict, Verdict::kPass);
  EXPECT_EQ(report_exit_code(*passed), kExitPass);
  EXPECT_EQ(report_exit_code(*parsed), kExitGateFailed);
}

// merge reads either tool's gate report from one parse of the file, by the envelope's kind.
TEST(GateReport, EitherToolsReportIsReadByItsKindAndOtherKindsAreRefusedByName) {
  const GoldenReport golden = report_for("cand_fail");
  auto g = parse_gate_report_json(golden_report_json(golden), "g.json");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(std::holds_alternative<GoldenReport>(*g));
  EXPECT_EQ(std::get<GoldenReport>(*g).run.checks.size(), golden.run.checks.size());

  ResidencyReport ane;
  ane.tool_version = "t";
  ane.gate_file = "gates/x.json";
  auto a = parse_gate_report_json(residency_report_json(ane), "a.json");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(std::holds_alternative<ResidencyReport>(*a));
  EXPECT_EQ(std::get<ResidencyReport>(*a).gate_file, "gates/x.json");

  Json other = Json::parse(golden_report_json(golden));
  other["schema_version"] = "shardgate/probe-report@1";
  other["command"] = "probe";
  auto o = parse_gate_report_json(other.dump(), "p.json");
  ASSERT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().code(), ErrorCode::kUsage) << o.status().to_string();
  EXPECT_NE(o.status().message().find("p.json is a probe-report report of golden-validator probe"),
            std::string::npos) << o.status().message();

  Json broken = Json::parse(golden_report_json(golden));
  broken.erase("checks");
  EXPECT_FALSE(parse_gate_report_json(broken.dump(), "b.json").is_ok());
  EXPECT_FALSE(parse_gate_report_json("{", "c.json").is_ok());
}

// diff reads ane reports it did not write with the typed reader merge uses: fields of another
// type (fuzz_reports found a shard's "verdict" as an object, on which Json's value() threw)
// end as bad input naming the file and the place, never a throw; a valid report's placements
// are compared.
// A shard of an ane-validator report with one conv, main:y, on the ANE by rule C1.
ShardCheck one_conv_shard(const std::string& path) {
  ShardCheck shard;
  shard.path = path;
  shard.form = "mlpackage";
  OpPlacement op;
  op.function = "main";
  op.block_path = {-1};
  op.type = "conv";
  op.outputs = {"y"};
  op.placement = Placement::kANE;
  op.rule_id = "C1";
  shard.ops.push_back(op);
  return shard;
}

TEST(GateReport, DiffReadsAneReportsWithTheTypedReaderAndNamesTheFileAndPlace) {
  ResidencyReport ane;
  ane.tool_version = "t";
  ane.shards.push_back(one_conv_shard("/shards/a.mlpackage"));
  Json j = Json::parse(residency_report_json(ane));
  const std::string old_path = ::testing::TempDir() + "/typed_ane_old.json";
  const std::string new_path = ::testing::TempDir() + "/typed_ane_new.json";
  ASSERT_TRUE(write_file_atomic(old_path, j.dump()).is_ok());

  // The op moved to the CPU: a regression naming the op, the move and its rule.
  Json moved = j;
  moved["shards"][0]["ops"][0]["placement"] = "CPU";
  moved["shards"][0]["ops"][0]["rule"] = "C9";
  ASSERT_TRUE(write_file_atomic(new_path, moved.dump()).is_ok());
  RegressionPolicy policy;
  policy.tolerances["placement"] = RegressionTolerance{0, "no op may leave the ANE"};
  auto d = diff_reports(old_path, new_path, policy);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  ASSERT_EQ(d->regressions(), 1);
  const DiffRow& row = d->rows.front();
  EXPECT_EQ(row.item, "a.mlpackage");
  EXPECT_EQ(row.what, "op main:y conv");
  EXPECT_EQ(row.old_value, "ANE");
  EXPECT_EQ(row.new_value, "CPU");
  EXPECT_NE(row.why.find("ANE -> CPU, rule C9"), std::string::npos) << row.why;

  // Fields of another type: kFormat (exit 2) naming the file and the place.
  for (const auto& [field, value] : {std::pair<std::string, Json>{"placement", Json::array()},
                                     std::pair<std::string, Json>{"index", "x"},
                                     std::pair<std::string, Json>{"function", 3}}) {
    Json odd = j;
    odd["shards"][0]["ops"][0][field] = value;
    ASSERT_TRUE(write_file_atomic(new_path, odd.dump()).is_ok());
    auto bad = diff_reports(old_path, new_path, policy);
    ASSERT_FALSE(bad.is_ok()) << field;
    EXPECT_EQ(bad.status().code(), ErrorCode::kFormat) << bad.status().to_string();
    EXPECT_NE(bad.status().to_string().find(new_path), std::string::npos) << bad.status().to_string();
    EXPECT_NE(bad.status().to_string().find("shards[0].ops[0]." + field), std::string::npos)
        << bad.status().to_string();
  }
  // The shape fuzz_reports found: a shard object holding only odd types, never a throw.
  Json odd = j;
  odd["shards"] = Json::array({Json{{"name", "a"}, {"verdict", Json::object()}, {"ops", Json::array({7})}}});
  ASSERT_TRUE(write_file_atomic(new_path, odd.dump()).is_ok());
  EXPECT_NO_THROW({
    auto r = diff_reports(old_path, new_path, policy);
    EXPECT_FALSE(r.is_ok());
  });
}

// A golden report holding one check identity twice (probes of two candidates sharing a file
// name, merged) cannot be paired check for check: diff refuses it (exit 2) naming the file and
// the check, instead of keeping one copy and never comparing the other.
TEST(GateReport, DiffRefusesAGoldenReportHoldingACheckTwice) {
  GoldenReport report = report_for("cand_pass");
  ASSERT_FALSE(report.run.checks.empty());
  const std::string good = ::testing::TempDir() + "/twice_good.json";
  const std::string twice = ::testing::TempDir() + "/twice_bad.json";
  ASSERT_TRUE(write_file_atomic(good, golden_report_json(report)).is_ok());
  report.run.checks.push_back(report.run.checks.front());
  report.evaluation.checks.push_back(report.evaluation.checks.front());
  ASSERT_TRUE(write_file_atomic(twice, golden_report_json(report)).is_ok());
  RegressionPolicy policy;
  ASSERT_TRUE(diff_reports(good, good, policy).is_ok());
  for (const auto& [a, b] : {std::pair{good, twice}, {twice, good}}) {
    auto d = diff_reports(a, b, policy);
    ASSERT_FALSE(d.is_ok()) << a << " vs " << b;
    EXPECT_EQ(d.status().code(), ErrorCode::kUsage) << d.status().to_string();
    EXPECT_NE(d.status().to_string().find(twice), std::string::npos) << d.status().to_string();
    EXPECT_NE(d.status().to_string().find("holds check " + report.run.checks.front().identity.id()), std::string::npos)
        << d.status().to_string();
  }
}

// A model's shards often share a file name (layers/00/model.mlpackage, layers/01/...). diff
// paired shards by file name alone, so every model.mlpackage of one report met the last of the
// other and the rest were never compared: a shard that left the ANE passed unseen. Shards now
// pair by the path ends that tell them apart, across reports written from other directories,
// and every report names them so.
TEST(GateReport, DiffPairsShardsThatShareAFileNameByTheirDirectories) {
  auto write = [](const ResidencyReport& r, const std::string& name) {
    const std::string path = ::testing::TempDir() + "/" + name;
    EXPECT_TRUE(write_file_atomic(path, residency_report_json(r)).is_ok());
    return path;
  };
  ResidencyReport old_r;
  old_r.tool_version = "t";
  for (const char* layer : {"00", "01", "02"}) old_r.shards.push_back(one_conv_shard(std::string("/run1/layers/") + layer + "/model.mlpackage"));
  // The new run, from another directory: layer 00's op left the ANE, layer 02 is gone and
  // layer 03 is new.
  ResidencyReport new_r = old_r;
  new_r.shards.clear();
  for (const char* layer : {"00", "01", "03"}) new_r.shards.push_back(one_conv_shard(std::string("/run2/out/layers/") + layer + "/model.mlpackage"));
  new_r.shards[0].ops[0].placement = Placement::kCPU;
  const std::string old_path = write(old_r, "pair_old.json"), new_path = write(new_r, "pair_new.json");
  RegressionPolicy policy;
  policy.tolerances["placement"] = RegressionTolerance{0, "no op may leave the ANE"};
  auto d = diff_reports(old_path, new_path, policy);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  std::map<std::string, std::string> rows;  // item + what -> old -> new
  for (const DiffRow& r : d->rows) rows[r.item + " | " + r.what] = r.old_value + " -> " + r.new_value;
  EXPECT_EQ(rows["00/model.mlpackage | op main:y conv"], "ANE -> CPU");
  EXPECT_EQ(rows["02/model.mlpackage | shard"], "present -> absent");
  EXPECT_EQ(rows["03/model.mlpackage | shard"], "absent -> present");
  EXPECT_EQ(rows.size(), 3u) << "01 unchanged, nothing else";
  EXPECT_EQ(d->regressions(), 2) << "the op that moved and the shard that is gone";

  // One old shard against a report of two sharing its file name: it pairs with the one whose
  // directory matches, not with both and not with neither.
  ResidencyReport one = old_r;
  one.shards = {one_conv_shard("/run1/layers/01/model.mlpackage")};
  auto d1 = diff_reports(write(one, "pair_one.json"), new_path, policy);
  ASSERT_TRUE(d1.is_ok()) << d1.status().to_string();
  rows.clear();
  for (const DiffRow& r : d1->rows) rows[r.item + " | " + r.what] = r.old_value + " -> " + r.new_value;
  EXPECT_EQ(rows["00/model.mlpackage | shard"], "absent -> present");
  EXPECT_EQ(rows["03/model.mlpackage | shard"], "absent -> present");
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(d1->regressions(), 0);

  // A report naming one shard twice cannot be paired: refused (exit 2), naming file and shard;
  // so is a path that ends like two of the other report's.
  ResidencyReport twice = old_r;
  twice.shards[2] = twice.shards[1];
  auto bad = diff_reports(write(twice, "pair_twice.json"), new_path, policy);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kUsage);
  EXPECT_NE(bad.status().to_string().find("/run1/layers/01/model.mlpackage"), std::string::npos) << bad.status().to_string();
  EXPECT_NE(bad.status().to_string().find("pair_twice.json"), std::string::npos) << bad.status().to_string();
  ResidencyReport nested = old_r;
  nested.shards = {one_conv_shard("x/model.mlpackage"), one_conv_shard("a/x/model.mlpackage")};
  ResidencyReport deeper = old_r;
  deeper.shards = {one_conv_shard("/r/a/x/model.mlpackage")};
  auto ambiguous = diff_reports(write(nested, "pair_nested.json"), write(deeper, "pair_deeper.json"), policy);
  ASSERT_FALSE(ambiguous.is_ok());
  EXPECT_EQ(ambiguous.status().code(), ErrorCode::kUsage);
  EXPECT_NE(ambiguous.status().to_string().find("ends like two shards"), std::string::npos) << ambiguous.status().to_string();

  // The reports themselves name the shards apart: JSON "name" and every Markdown row.
  const Json j = Json::parse(residency_report_json(new_r));
  EXPECT_EQ(j["shards"][0]["name"], "00/model.mlpackage");
  EXPECT_EQ(j["shards"][2]["name"], "03/model.mlpackage");
  const std::string md = residency_report_markdown(new_r);
  EXPECT_NE(md.find("| 01/model.mlpackage | "), std::string::npos) << md;
  EXPECT_EQ(md.find("| model.mlpackage |"), std::string::npos) << md;
}

TEST(GoldenReport, NonFiniteValuesRoundTripAsStrings) {
  // Identical tensors: SNR is +inf on every row.
  auto ref = open_golden_source(SG_TEST_DATA_DIR "/golden/ref");
  ASSERT_TRUE(ref.is_ok());
  auto run = compare_sources(**ref, **ref, {});
  ASSERT_TRUE(run.is_ok());
  auto report = make_golden_report(std::move(*run), builtin_gate_policy(), false, "test");
  ASSERT_TRUE(report.is_ok());
  const std::string text = golden_report_json(*report);
  EXPECT_NE(text.find("\"snr_db\": \"inf\""), std::string::npos);
  EXPECT_EQ(testing::json_schema_violations(schema(), text), std::vector<std::string>{});
  auto parsed = parse_golden_report_json(text, "r.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  const auto& snr = parsed->run.checks[0].rows[0].value(Metric::kSnrDb);
  ASSERT_TRUE(snr.has_value());
  EXPECT_TRUE(std::isinf(*snr) && *snr > 0);
  EXPECT_EQ(parsed->evaluation.summary.verdict, Verdict::kPass);
}

TEST(GoldenReport, NanCheckIsReportedWithItsLocation) {
  const GoldenReport report = report_for("cand_nan");
  const Json j = Json::parse(golden_report_json(report));
  EXPECT_EQ(testing::json_schema_violations(schema(), j.dump()), std::vector<std::string>{});
  const Json e = expected()["cand_nan"];
  bool seen = false;
  for (const Json& c : j["checks"]) {
    if (c["checkpoint"] != e["checkpoint"]) continue;
    seen = true;
    EXPECT_EQ(c["verdict"], "nonfinite");
    EXPECT_EQ(c["nonfinite"]["tensor"], e["tensor"]);
    EXPECT_EQ(c["nonfinite"]["flat_index"], e["flat_index"]);
    EXPECT_EQ(c["nonfinite"]["position"], e["position"]);
    EXPECT_EQ(c["nonfinite"]["value"], "nan");
  }
  EXPECT_TRUE(seen);
  auto parsed = parse_golden_report_json(j.dump(), "r.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->evaluation.summary.verdict, Verdict::kFail);
}

TEST(GoldenReport, ParseRefusesForeignOrBrokenReports) {
  EXPECT_EQ(parse_golden_report_json("{\"schema_version\": \"other\"}", "r.json").status().code(),
            ErrorCode::kFormat);
  Json j = Json::parse(golden_report_json(report_for("cand_pass")));
  j["checks"][0]["rows"][0]["values"]["cosinus"] = 1.0;
  auto r = parse_golden_report_json(j.dump(), "r.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("checks[0].rows[0]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("cosinus"), std::string::npos);
}

TEST(GoldenReport, HtmlHasAHeatMapCellPerRowAndALineChart) {
  const GoldenReport report = report_for("cand_fail");
  const std::string html = golden_report_html(report);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<rect class=\"cell\""), 6u * 8u);
  EXPECT_NE(html.find("data-check=\"hidden.2\" data-position=\"5\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"linechart\""), std::string::npos);
  EXPECT_NE(html.find("<polyline class=\"series\""), std::string::npos);
  // The failing cell is drawn red-ish (R=0xe6), a passing one green (R=0x3c).
  const std::regex failing(R"(data-check="hidden\.2" data-position="5"[^>]*fill="#e6)");
  EXPECT_TRUE(std::regex_search(html, failing));
  const std::regex passing(R"(data-check="hidden\.0" data-position="0"[^>]*fill="#3c)");
  EXPECT_TRUE(std::regex_search(html, passing));
  // Self-contained: no external resources.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(GoldenReport, HtmlEscapesTheRowAxisOfAReportReadBack) {
  // merge and regate render reports read from files: every string in them is the file's.
  Json j = Json::parse(golden_report_json(report_for("cand_fail")));
  for (Json& check : j["checks"]) check["row_axis"] = "<script>alert(1)</script>";
  auto read = parse_golden_report_json(j.dump(), "r.json");
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const std::string html = golden_report_html(*read);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; →"), std::string::npos);
}

TEST(GoldenReport, MarkdownCodeSpansShowNamesAsTheyAre) {
  // Inside backticks a backslash is no escape but shows: a path or check name in a code span
  // is written as it is (underscores too), with a fence longer than any backtick run in it.
  GoldenReport report = report_for("cand_fail");
  ASSERT_TRUE(report.evaluation.summary.first_failure_check.has_value());
  CheckResult& failing = report.run.checks[*report.evaluation.summary.first_failure_check];
  failing.identity.checkpoint = "moe_`gate`_out";
  report.run.inputs.push_back({"chain", "chains/my_chain.json", ""});
  const std::string md = golden_report_markdown(report);
  EXPECT_NE(md.find("- ``moe_`gate`_out``: "), std::string::npos) << md;
  EXPECT_NE(md.find("- chain: `chains/my_chain.json`\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("my\\_chain"), std::string::npos) << md;
}

// Markdown text never opens raw HTML: a job summary renders it, and a name holding "<!--" hid
// everything after it. '<' and '&' are shown with a backslash, as Markdown punctuation is.
TEST(GoldenReport, MarkdownTextOpensNoHtml) {
  GoldenReport report = report_for("cand_fail");
  report.views_finding = "shard a<!--b &amp; <script>x</script>";
  const std::string md = golden_report_markdown(report);
  EXPECT_EQ(md.find("a<!--"), std::string::npos) << md;
  EXPECT_EQ(md.find(" <script>"), std::string::npos) << md;
  EXPECT_NE(md.find("shard a\\<!--b \\&amp; \\<script>x\\</script>"), std::string::npos) << md;
}

TEST(GoldenReport, JunitMarkdownAndTable) {
  const GoldenReport report = report_for("cand_fail");
  const std::string junit = golden_report_junit(report);
  EXPECT_EQ(count(junit, "<testcase "), 6u);
  EXPECT_EQ(count(junit, "<failure "), 2u);
  EXPECT_NE(junit.find("tests=\"6\" failures=\"2\""), std::string::npos);
  const std::string md = golden_report_markdown(report);
  EXPECT_NE(md.find("FAIL"), std::string::npos);
  EXPECT_NE(md.find("| 2 | hidden.2 |"), std::string::npos);
  TableOptions opt;
  opt.unicode = false;
  const std::string table = golden_report_table(report, opt);
  EXPECT_NE(table.find("first below threshold at layer 2"), std::string::npos);
  EXPECT_NE(table.find("logits per position"), std::string::npos);
  EXPECT_NE(table.find("first failure: hidden.2 (layer 2): cosine min 0.646174 at position 5"),
            std::string::npos);
}

TEST(GoldenReport, WriteIsAtomicAndNamesThePathOnError) {
  const std::string bad = "/nonexistent-dir-sg/report.json";
  Status s = write_report_file(bad, "{}");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(bad), std::string::npos);
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

// One layered check with the given per-position cosines.
CheckResult cosine_check(int64_t layer, const std::vector<double>& cosines) {
  CheckResult c;
  c.identity.checkpoint = "hidden." + std::to_string(layer);
  c.identity.kind = "hidden";
  c.identity.layer = layer;
  c.shape = {1, static_cast<int64_t>(cosines.size()), 4};
  c.position_axis = 1;
  for (size_t p = 0; p < cosines.size(); ++p) {
    RowResult r;
    r.position = static_cast<int64_t>(p);
    r.value(Metric::kCosine) = cosines[p];
    c.rows.push_back(r);
  }
  return c;
}

// With --percentile p10 the gate passes layer 0 (one outlier position at 0.90, p10 0.981) and
// fails layer 1: the table, the trend, the summary, Markdown and HTML all show p10, name it, and
// agree on layer 1. (Before: the table showed p10 under "min cos", the trend used the minimum
// and named layer 0.)
TEST(GoldenReport, EveryViewShowsTheStatisticTheGateUsedByName) {
  FidelityRun run;
  run.command = "compare";
  run.checks.push_back(cosine_check(0, {0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.90}));
  run.checks.push_back(cosine_check(1, {0.96, 0.95, 0.96, 0.96, 0.96, 0.96, 0.96, 0.96, 0.96, 0.96}));
  run.checks.push_back(cosine_check(2, {0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99}));
  GatePolicy policy = builtin_gate_policy();
  policy.defaults.percentile = 10;
  auto report = make_golden_report(run, policy, false, "test");
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  const GateSummary& s = report->evaluation.summary;
  ASSERT_EQ(s.verdict, Verdict::kFail);
  ASSERT_EQ(s.first_failure_check, 1u);

  TableOptions to;
  to.unicode = false;
  const std::string table = golden_report_table(*report, to);
  EXPECT_NE(table.find("cos p10"), std::string::npos) << table;
  EXPECT_EQ(table.find("min cos"), std::string::npos) << table;
  EXPECT_NE(table.find("0.98100"), std::string::npos) << table;  // layer 0's p10, not its min 0.9
  EXPECT_NE(table.find("trend  cosine p10, layers 0..2"), std::string::npos) << table;
  EXPECT_NE(table.find("first below threshold at layer 1 (hidden.1)"), std::string::npos) << table;

  // The summary: the p10 value with its name; a position only beside its own value.
  EXPECT_NE(s.message.find("first failure: hidden.1 (layer 1): cosine p10 0.959 (worst 0.95 at "
                           "position 1), needs >= 0.97; failing positions: 0, 1, 2, 3, 4, 5, 6, "
                           "7, … (10 in all)"),
            std::string::npos)
      << s.message;

  const std::string md = golden_report_markdown(*report);
  EXPECT_NE(md.find("| cosine p10 |"), std::string::npos) << md;
  const std::string html = golden_report_html(*report);
  EXPECT_NE(html.find("<th>cosine p10</th>"), std::string::npos);
  EXPECT_NE(html.find("Cosine p10 per layer"), std::string::npos);
  EXPECT_NE(html.find("hidden.0 (layer 0): cosine p10 0.98100"), std::string::npos);
  const Json j = Json::parse(golden_report_json(*report));
  EXPECT_EQ(j["checks"][0]["metrics"][0]["statistic"], "p10");
  EXPECT_NEAR(j["checks"][0]["metrics"][0]["value"].get<double>(), 0.981, 1e-12);
}

// Without a percentile: the minimum, at the position that holds it, and the failing positions
// listed apart (never "at position 4: <the minimum of position 6>").
TEST(GoldenReport, SummaryNeverPairsAPositionWithAnotherPositionsValue) {
  FidelityRun run;
  run.command = "compare";
  run.checks.push_back(cosine_check(0, {0.99, 0.99, 0.96, 0.99, 0.95, 0.99}));
  auto report = make_golden_report(run, builtin_gate_policy(), false, "test");
  ASSERT_TRUE(report.is_ok());
  const std::string& m = report->evaluation.summary.message;
  EXPECT_NE(m.find("hidden.0 (layer 0): cosine min 0.95 at position 4, needs >= 0.97; failing "
                   "positions: 2, 4"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("at position 2"), std::string::npos) << m;
}

// A cosine of 0.96999996 failed while every view printed it rounded onto the threshold:
// "cosine min 0.97 at position 1, needs >= 0.97", "0.97000" in the table, "0.970000" in JUnit.
// A value gets more digits until its text is on its own side of the threshold; values away from
// it keep their usual digits (0.97000004 passes and still reads 0.97000).
TEST(GoldenReport, AValueJustBelowItsThresholdNeverPrintsAsTheThreshold) {
  FidelityRun run;
  run.command = "compare";
  run.checks.push_back(cosine_check(0, {0.99, 0.96999996}));
  run.checks.push_back(cosine_check(1, {0.97000004, 0.99}));
  CheckResult norm = cosine_check(2, {0.99});
  norm.rows[0].value(Metric::kNormRatio) = 0.79999999;  // below the default [0.8, 1.25]
  run.checks.push_back(norm);
  auto report = make_golden_report(run, builtin_gate_policy(), false, "test");
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  const GateEvaluation& ev = report->evaluation;
  ASSERT_EQ(ev.checks[0].verdict, Verdict::kFail);
  ASSERT_EQ(ev.checks[1].verdict, Verdict::kPass);
  ASSERT_EQ(ev.checks[2].verdict, Verdict::kFail);
  EXPECT_NE(ev.summary.message.find("cosine min 0.96999996 at position 1, needs >= 0.97"),
            std::string::npos) << ev.summary.message;
  EXPECT_NE(ev.checks[2].message.find("norm_ratio min/max [0.79999999, 0.79999999] (worst "
                                      "0.79999999 at position 0), needs within [0.8, 1.25]"),
            std::string::npos) << ev.checks[2].message;

  TableOptions to;
  to.unicode = false;
  to.all_positions = true;
  const std::string table = golden_report_table(*report, to);
  EXPECT_NE(table.find("0.96999996"), std::string::npos) << table;
  EXPECT_NE(table.find("[0.79999999, 0.79999999]"), std::string::npos) << table;
  EXPECT_NE(table.find("0.97000 "), std::string::npos) << table;  // the pass keeps 5 digits
  const std::string junit = golden_report_junit(*report);
  EXPECT_NE(junit.find("cosine min = 0.96999996 (fail)"), std::string::npos) << junit;
  EXPECT_NE(junit.find("norm_ratio min/max = [0.79999999, 0.79999999] (fail)"), std::string::npos)
      << junit;
  EXPECT_EQ(junit.find("0.970000"), std::string::npos) << junit;
  const std::string md = golden_report_markdown(*report);
  EXPECT_NE(md.find("| 0.96999996 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.97000 |"), md.rfind("0.97000 |")) << md;  // only layer 1's pass
  const std::string html = golden_report_html(*report);
  EXPECT_NE(html.find("cosine 0.96999996 (threshold 0.97)"), std::string::npos);
}

}  // namespace
}  // namespace sg
