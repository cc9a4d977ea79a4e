// What the human-readable renderers show beside the verdicts: rows probe's input-stability
// check excluded as `unstable` (HTML, Markdown, JUnit as skipped, never failure) and the views of
// a `run --both` kept apart in the HTML chart.
#include "shardgate/golden_report.h"
#include "support/text_count.h"

#include <gtest/gtest.h>

#include <regex>

namespace sg {
namespace {
using sg::testing::count;

// A probe check: one row per seed, cosine and the baseline's own stability cosine per seed.
CheckResult probe_check(const std::vector<double>& cosines, const std::vector<double>& stability) {
  CheckResult c;
  c.identity.checkpoint = "moe_out";
  c.identity.kind = "hidden";
  c.identity.layer = 2;
  c.shape = {static_cast<int64_t>(cosines.size()), 4};
  c.row_axis = "seed";
  for (size_t s = 0; s < cosines.size(); ++s) {
    RowResult r;
    r.seed = static_cast<int64_t>(s);
    r.value(Metric::kCosine) = cosines[s];
    r.stability_cosine = stability[s];
    c.rows.push_back(r);
  }
  return c;
}

// Seed 3's baseline moves to 0.41 (margin -0.56 to 0.97): excluded; the other seeds pass.
GoldenReport unstable_report() {
  FidelityRun run;
  run.command = "probe";
  run.checks.push_back(probe_check({0.99, 0.985, 0.99, 0.30, 0.98}, {1.0, 0.999, 0.998, 0.41, 0.997}));
  auto report = make_golden_report(run, builtin_gate_policy(), false, "test");
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  return std::move(*report);
}

TEST(GoldenReportRows, UnstableRowIsInTheEvaluationAndTheCheckPasses) {
  const GoldenReport r = unstable_report();
  ASSERT_EQ(r.evaluation.checks.size(), 1u);
  EXPECT_EQ(r.evaluation.checks[0].verdict, Verdict::kPass);
  EXPECT_EQ(r.evaluation.checks[0].unstable_rows, 1);
}

TEST(GoldenReportRows, JunitListsUnstableRowsAsSkippedWithTheirMarginNotAsFailures) {
  const std::string junit = golden_report_junit(unstable_report());
  EXPECT_EQ(count(junit, "<failure "), 0u) << junit;
  EXPECT_EQ(count(junit, "<skipped "), 1u) << junit;
  EXPECT_NE(junit.find("tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\""), std::string::npos)
      << junit;
  EXPECT_NE(junit.find("name=\"moe_out seed 3\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<skipped message=\"seed 3: unstable (the FP16 baseline moves to cosine "
                       "0.4100 under a tiny input perturbation, margin -0.56 to min_cosine 0.9700)"),
            std::string::npos)
      << junit;
}

TEST(GoldenReportRows, MarkdownListsUnstableRowsWithTheirMargin) {
  const std::string md = golden_report_markdown(unstable_report());
  EXPECT_NE(md.find("### Unstable rows (excluded from the gate)"), std::string::npos) << md;
  EXPECT_NE(md.find("- `moe_out` seed 3: unstable (the FP16 baseline moves to cosine 0.4100"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("margin -0.56 to min\\_cosine 0.9700"), std::string::npos) << md;  // Markdown-escaped
}

TEST(GoldenReportRows, HtmlMarksUnstableCellsAndListsThemWithTheirMargin) {
  const std::string html = golden_report_html(unstable_report());
  EXPECT_NE(html.find("<h2>Unstable rows (excluded from the gate)</h2>"), std::string::npos);
  EXPECT_NE(html.find("<li class=\"unstable\"><code>moe_out</code> seed 3: unstable (the FP16 "
                      "baseline moves to cosine 0.4100"),
            std::string::npos)
      << html;
  // Exactly one heat-map cell in the unstable colour, and its tooltip says why.
  EXPECT_EQ(count(html, "fill=\"#8e44ad\""), 1u);
  EXPECT_NE(html.find("unstable: the FP16 baseline moves to cosine 0.4100 (excluded)"), std::string::npos);
}

TEST(GoldenReportRows, NoUnstableSectionWithoutUnstableRows) {
  FidelityRun run;
  run.command = "probe";
  run.checks.push_back(probe_check({0.99, 0.99}, {1.0, 0.999}));
  auto r = make_golden_report(run, builtin_gate_policy(), false, "test");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(golden_report_html(*r).find("Unstable rows"), std::string::npos);
  EXPECT_EQ(golden_report_markdown(*r).find("Unstable rows"), std::string::npos);
  EXPECT_EQ(golden_report_junit(*r).find("<skipped"), std::string::npos);
}

// One layered check per layer of one view.
CheckResult view_check(int64_t layer, const std::string& mode, double cosine) {
  CheckResult c;
  c.identity.checkpoint = "hidden." + std::to_string(layer);
  c.identity.kind = "hidden";
  c.identity.layer = layer;
  c.identity.labels = {{"mode", mode}};
  c.shape = {1, 2, 4};
  c.position_axis = 1;
  for (int64_t p = 0; p < 2; ++p) {
    RowResult r;
    r.position = p;
    r.value(Metric::kCosine) = cosine;
    c.rows.push_back(r);
  }
  return c;
}

// run --both: free-running drifts (0.99, 0.98, 0.95), teacher-forced stays (0.999 each). One
// line through all six points would zig-zag between the views; each view gets its own chart.
TEST(GoldenReportRows, HtmlDrawsOneChartPerViewNeverOneLineThroughBoth) {
  FidelityRun run;
  run.command = "run";
  run.views.push_back({"free-running", "does the chain as deployed stay within the gate", {}});
  run.views.push_back({"teacher-forced", "does any shard fail on its own", {}});
  const double fr[] = {0.99, 0.98, 0.95};
  for (int64_t l = 0; l < 3; ++l) run.checks.push_back(view_check(l, "free-running", fr[l]));
  for (int64_t l = 0; l < 3; ++l) run.checks.push_back(view_check(l, "teacher-forced", 0.999));
  auto r = make_golden_report(run, builtin_gate_policy(), false, "test");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::string html = golden_report_html(*r);
  EXPECT_EQ(count(html, "<svg class=\"linechart\""), 2u) << html;
  EXPECT_NE(html.find("<svg class=\"linechart\" data-view=\"mode=free-running\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"linechart\" data-view=\"mode=teacher-forced\""), std::string::npos);
  EXPECT_NE(html.find("<h3>view free-running: does the chain as deployed stay within the gate</h3>"),
            std::string::npos);
  EXPECT_NE(html.find("<h3>view teacher-forced: does any shard fail on its own</h3>"), std::string::npos);
  // Every polyline joins the three layers of one view only.
  const std::regex polyline("<polyline class=\"series\" points=\"([^\"]*)\"");
  size_t lines = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), polyline); it != std::sregex_iterator(); ++it) {
    ++lines;
    EXPECT_EQ(count((*it)[1].str(), ","), 3u) << (*it)[1].str();
  }
  EXPECT_EQ(lines, 2u);
  // The teacher-forced chart's points are labelled with their view.
  EXPECT_NE(html.find("hidden.2[mode=teacher-forced] (layer 2): cosine min 0.99900"), std::string::npos);
}

}  // namespace
}  // namespace sg
