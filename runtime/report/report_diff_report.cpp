// The report forms of `golden-validator diff` (report_diff.h).
#include "shardgate/report_diff.h"

#include "report/escape.h"
#include "report/envelope_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace sg {

namespace {

// JSON has no inf or nan: written as the strings "inf", "-inf", "nan", as the golden report
// writes metric values (a value that became nan is worse by inf; nlohmann would write null).
nlohmann::ordered_json number_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

}  // namespace

std::string report_diff_json(const ReportDiff& diff, const RegressionPolicy& policy,
                             const std::vector<std::string>& command_line,
                             const std::string& tool_version) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const DiffRow& r : diff.rows) {
    rows.push_back({{"item", r.item}, {"what", r.what}, {"old", r.old_value}, {"new", r.new_value},
                    {"worse_by", number_json(r.worse_by)}, {"regression", r.regression}, {"why", r.why}});
  }
  nlohmann::ordered_json tolerances = nlohmann::ordered_json::object();
  for (const auto& [k, t] : policy.tolerances) tolerances[k] = {{"value", t.value}, {"reason", t.reason}};
  ReportEnvelope e = make_report_envelope("report-diff", kReportDiffVersion, "golden-validator",
                                          tool_version, "diff", command_line);
  e.set_gate_verdict(diff.regressions() == 0);
  if (!policy.path.empty()) e.provenance.gate = ReportInput{"gate", policy.path, policy.sha256};
  e.provenance.inputs = {{"old", diff.old_path, diff.old_sha256}, {"new", diff.new_path, diff.new_sha256}};
  nlohmann::ordered_json j = envelope_json(e);
  j["reports_of"] = diff.tool;
  j["tolerances"] = tolerances;
  j["summary"] = {{"compared", diff.compared}, {"changed", diff.rows.size()},
                  {"worse", diff.worse()}, {"regressions", diff.regressions()}};
  j["rows"] = rows;
  return json_util::file_text(j);
}

std::string report_diff_table(const ReportDiff& diff, bool all) {
  std::string out = fmt::format("diff of {} reports: {} -> {}\n", diff.tool, diff.old_path, diff.new_path);
  for (const DiffRow& r : diff.rows) {
    if (!all && r.worse_by <= 0) continue;
    out += fmt::format("  {:<10} {:<40} {:<34} {} -> {}{}\n",
                       r.regression ? "REGRESSION" : (r.worse_by > 0 ? "worse" : "better"), r.item,
                       r.what, r.old_value, r.new_value, r.why.empty() ? "" : "  (" + r.why + ")");
  }
  out += fmt::format("diff: {} compared, {} changed, {} worse, {} regression(s) -> {}\n",
                     diff.compared, diff.rows.size(), diff.worse(), diff.regressions(),
                     diff.regressions() > 0 ? "REGRESSION" : "no regression");
  return out;
}

std::string report_diff_markdown(const ReportDiff& diff) {
  std::string out = fmt::format("## Report diff: {} regression(s), {} worse, {} changed of {} compared\n\n",
                                diff.regressions(), diff.worse(), diff.rows.size(), diff.compared);
  out += fmt::format("{} → {} ({} reports)\n\n", md_code(diff.old_path), md_code(diff.new_path), diff.tool);
  if (diff.rows.empty()) return out + "Nothing changed.\n";
  out += "| | item | what | old | new | why |\n|---|---|---|---|---|---|\n";
  for (const DiffRow& r : diff.rows) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n",
                       r.regression ? "**regression**" : (r.worse_by > 0 ? "worse" : "better"),
                       md_escape(r.item), md_escape(r.what), md_escape(r.old_value),
                       md_escape(r.new_value), md_escape(r.why));
  }
  return out;
}

std::string report_diff_junit(const ReportDiff& diff) {
  std::string cases;
  for (const DiffRow& r : diff.rows) {
    cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", xml_escape(r.item), xml_escape(r.what));
    if (r.regression) {
      cases += fmt::format("      <failure message=\"{}\"/>\n",
                           xml_escape(fmt::format("{} -> {}: {}", r.old_value, r.new_value, r.why)));
    }
    cases += "    </testcase>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"diff\" "
      "tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      diff.rows.size(), diff.regressions(), cases);
}

}  // namespace sg
