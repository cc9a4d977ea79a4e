// The HTML report at real sizes, laid out by headless Chromium (Debian's `chromium`) in a
// 1400 px wide window: for 8 x 4, 80 x 8 and 80 x 128 checks x positions, free-running,
// teacher-forced, --both and probe reports, the page's own layout numbers (measured by a probe
// script appended to a copy of the page) must show: no horizontal page overflow; the first
// failure and the lowest cosine linked from the summary at the top, their targets present; row
// labels inside the map; every check (logits too) on a chart; no overlapping axis labels; one
// series per view. Skipped when chromium is not installed, unless SG_REQUIRE_CHROMIUM=1
// (.ci/run sets it after installing chromium).
#include "shardgate/golden_report.h"
#include "shardgate/io.h"
#include "support/cli_run.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sg {
namespace {

namespace fs = std::filesystem;

// Measured in the page by Chromium; written into <pre id="layout"> for --dump-dom.
constexpr const char* kProbe = R"JS(<script>
(() => {
  const r = {};
  r.viewport = window.innerWidth;
  r.pageWidth = document.documentElement.scrollWidth;
  const link = (text) => [...document.querySelectorAll('a[href^="#cell-"]')].find(a => a.parentElement.textContent.startsWith(text));
  for (const [key, text] of [["firstFailure", "first failure"], ["lowest", "lowest cosine"]]) {
    const a = link(text);
    r[key] = a ? {top: a.getBoundingClientRect().top, target: !!document.getElementById(a.getAttribute('href').slice(1))} : null;
  }
  r.labelsOutside = 0;
  for (const map of document.querySelectorAll('svg.heatmap')) {
    for (const t of map.querySelectorAll('text.label')) if (t.getBBox().x < 0) r.labelsOutside++;
  }
  r.charts = [];
  for (const svg of document.querySelectorAll('svg.linechart')) {
    const boxes = [...svg.querySelectorAll('text.xlabel')].map(t => t.getBBox());
    let overlaps = 0;
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) overlaps++;
    }
    const outside = [...svg.querySelectorAll('text')].filter(t => { const b = t.getBBox(); return b.x < 0 || b.x + b.width > svg.width.baseVal.value; }).length;
    r.charts.push({view: svg.dataset.view, points: svg.querySelectorAll('circle').length,
                   outputs: svg.querySelectorAll('circle.output').length, series: svg.querySelectorAll('polyline').length,
                   overlaps, outside});
  }
  r.mapAxis = (document.querySelector('svg.heatmap text.title') || {}).textContent || "";
  document.body.insertAdjacentHTML('beforeend', '<pre id="layout">' + JSON.stringify(r) + '</pre>');
})();
</script>)JS";

bool have_chromium() { return run_command("command -v chromium >/dev/null").code == 0; }

CheckResult check(const std::string& name, const std::string& kind, std::optional<int64_t> layer,
                  size_t rows, double base, const std::string& axis, std::vector<std::pair<std::string, std::string>> labels) {
  CheckResult c;
  c.identity.checkpoint = name;
  c.identity.kind = kind;
  c.identity.layer = layer;
  c.identity.labels = std::move(labels);
  c.row_axis = axis;
  c.shape = {1, static_cast<int64_t>(rows), 8};
  c.position_axis = 1;
  for (size_t p = 0; p < rows; ++p) {
    RowResult r;
    r.position = static_cast<int64_t>(p);
    if (axis == "seed") r.seed = static_cast<int64_t>(p);
    r.value(Metric::kCosine) = base - 0.0001 * static_cast<double>(p % 7);
    r.value(Metric::kNormRatio) = 1.0;
    c.rows.push_back(r);
  }
  return c;
}

// `layers` hidden checks and the logits per view; the logits fail at one position (the worst
// cell of the map, at the far right when there are many positions).
FidelityRun make_run(size_t layers, size_t positions, const std::vector<std::string>& modes, bool probe) {
  FidelityRun run;
  run.command = probe ? "probe" : "run";
  const std::string axis = probe ? "seed" : "position";
  for (const std::string& mode : modes) {
    std::vector<std::pair<std::string, std::string>> labels;
    if (modes.size() > 1 || !mode.empty()) labels = {{"mode", mode}};
    if (!mode.empty()) run.views.push_back({mode, mode + " view", {}});
    for (size_t l = 0; l < layers; ++l) {
      run.checks.push_back(check("hidden." + std::to_string(l), "hidden", static_cast<int64_t>(l), positions,
                                 0.999 - 0.0002 * static_cast<double>(l), axis, labels));
    }
    CheckResult logits = check("logits", "logits", std::nullopt, positions, 0.99, axis, labels);
    logits.rows.back().value(Metric::kCosine) = 0.9;
    run.checks.push_back(std::move(logits));
  }
  return run;
}

class HtmlLayout : public testing::TempDirTest {
 protected:
  HtmlLayout() : TempDirTest("sg_html_layout_") {}
  nlohmann::json layout_of(const GoldenReport& report, const std::string& name) {
    std::string html = golden_report_html(report);
    const size_t end = html.rfind("</body>");
    html.insert(end, kProbe);
    const fs::path page = dir_ / (name + ".html");
    if (std::getenv("SG_KEEP_HTML")) std::ofstream("/tmp/" + name + ".html") << html;
    std::ofstream(page) << html;
    const CliRun r = run_command("timeout 120 chromium --headless --no-sandbox --disable-gpu "
                                 "--hide-scrollbars --window-size=1400,1000 --dump-dom 'file://" +
                                 page.string() + "' 2>/dev/null");
    const size_t at = r.output.rfind("<pre id=\"layout\">");  // not the one in the script
    EXPECT_NE(at, std::string::npos) << name << ": no layout numbers\n" << r.output.substr(0, 2000);
    if (at == std::string::npos) return {};
    const size_t from = at + 17;
    return nlohmann::json::parse(r.output.substr(from, r.output.find("</pre>", from) - from));
  }
};

TEST_F(HtmlLayout, ReportsAtRealSizesFitAndLinkTheirFailure) {
  if (!have_chromium()) {
    if (std::getenv("SG_REQUIRE_CHROMIUM") != nullptr) FAIL() << "chromium is required (SG_REQUIRE_CHROMIUM)";
    GTEST_SKIP() << "chromium is not installed";
  }
  struct Case {
    std::string name;
    size_t layers, positions;
    std::vector<std::string> modes;
    bool probe;
  };
  const std::vector<Case> cases = {
      {"8x4", 8, 4, {""}, false},
      {"80x8", 80, 8, {""}, false},
      {"80x128", 80, 128, {""}, false},
      {"80x8_teacher_forced", 80, 8, {"teacher-forced"}, false},
      {"80x8_both", 80, 8, {"free-running", "teacher-forced"}, false},
      {"8x5_probe", 8, 5, {""}, true},
  };
  for (const Case& c : cases) {
    auto report = make_golden_report(make_run(c.layers, c.positions, c.modes, c.probe),
                                     builtin_gate_policy(), false, "test");
    ASSERT_TRUE(report.is_ok()) << report.status().to_string();
    const nlohmann::json l = layout_of(*report, c.name);
    ASSERT_TRUE(l.is_object()) << c.name;
    SCOPED_TRACE(c.name + ": " + l.dump());
    EXPECT_LE(l["pageWidth"].get<int>(), l["viewport"].get<int>()) << "the page scrolls sideways";
    // The failure is one click away from the top of the page, and the click has a target.
    ASSERT_TRUE(l["firstFailure"].is_object());
    EXPECT_LT(l["firstFailure"]["top"].get<double>(), 1000.0);
    EXPECT_TRUE(l["firstFailure"]["target"].get<bool>());
    ASSERT_TRUE(l["lowest"].is_object());
    EXPECT_TRUE(l["lowest"]["target"].get<bool>());
    EXPECT_EQ(l["labelsOutside"], 0);
    EXPECT_EQ(l["mapAxis"].get<std::string>().rfind(c.probe ? "seed" : "position", 0), 0u);
    // One chart per view, each with every check of its view, the logits as an output point.
    ASSERT_EQ(l["charts"].size(), c.modes.size());
    for (const auto& chart : l["charts"]) {
      EXPECT_EQ(chart["points"], c.layers + 1);
      EXPECT_EQ(chart["outputs"], 1);
      EXPECT_EQ(chart["series"], 1);
      EXPECT_EQ(chart["overlaps"], 0) << "axis labels overlap";
      EXPECT_EQ(chart["outside"], 0) << "text outside the chart";
    }
  }
}

}  // namespace
}  // namespace sg
