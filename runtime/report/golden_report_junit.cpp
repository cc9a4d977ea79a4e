// JUnit XML of a golden report: one <testcase> per check, a <failure> carrying the verdict
// message, so CI systems list each failing checkpoint by its stable id. A row probe's
// input-stability check excluded (`unstable`: the FP16 baseline itself moves more than the gate
// allows) is its own <testcase> marked <skipped> with its margin: visible in CI, never a failure.
// A check excluded from the gate (it depends on a random_* op), or one no threshold applies to,
// is marked <skipped> the same way.
#include "report/golden_report_util.h"

namespace sg {

std::string golden_report_junit(const GoldenReport& report) {
  using report_util::xml_escape;
  const FidelityRun& run = report.run;
  const GateEvaluation& ev = report.evaluation;
  int64_t failures = 0;
  int64_t excluded = 0;
  for (const CheckVerdict& v : ev.checks) {
    failures += v.verdict == Verdict::kPass || is_unjudged(v.verdict) ? 0 : 1;
    excluded += is_unjudged(v.verdict) ? 1 : 0;
  }
  // A run with nothing compared, or failing only through --strict, still fails in CI.
  if (report.error) {
    // The command stopped before measuring: one test case carrying the error.
    const std::string suite = report_util::junit_suite(report);
    return fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<testsuites name=\"golden-validator\" tests=\"1\" failures=\"0\" errors=\"1\">\n"
        "  <testsuite name=\"{0}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n"
        "    <properties>\n      <property name=\"tool_version\" value=\"{1}\"/>\n"
        "      <property name=\"command_line\" value=\"{2}\"/>\n    </properties>\n"
        "    <testcase classname=\"{0}\" name=\"{0}\">\n"
        "      <error type=\"{3}\" message=\"{4}\">exit code {5}</error>\n"
        "    </testcase>\n  </testsuite>\n</testsuites>\n",
        xml_escape(suite), xml_escape(report.tool_version),
        xml_escape(report_util::command_line_text(report.command_line)),
        xml_escape(report.error->kind), xml_escape(report.error->message), report.error->exit_code);
  }
  if (is_empty_slice(report)) {
    // Nothing selected in this CI job: one skipped case saying so, never a failure or a pass.
    const std::string suite = report_util::junit_suite(report);
    return fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<testsuites name=\"golden-validator\" tests=\"1\" failures=\"0\" errors=\"0\">\n"
        "  <testsuite name=\"{0}\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\">\n"
        "    <properties>\n      <property name=\"tool_version\" value=\"{1}\"/>\n"
        "      <property name=\"command_line\" value=\"{2}\"/>\n    </properties>\n"
        "    <testcase classname=\"{0}\" name=\"slice {3} of {4}\">\n"
        "      <skipped message=\"{5}\"/>\n    </testcase>\n  </testsuite>\n</testsuites>\n",
        xml_escape(suite), xml_escape(report.tool_version),
        xml_escape(report_util::command_line_text(report.command_line)), run.slice->index,
        run.slice->count, xml_escape(ev.summary.message));
  }
  const bool extra_failure = ev.summary.verdict != Verdict::kPass && failures == 0;
  std::vector<std::vector<report_util::UnstableRow>> unstable(run.checks.size());
  int64_t skipped = excluded;
  for (size_t i = 0; i < run.checks.size(); ++i) {
    unstable[i] = report_util::unstable_rows(report, i);
    skipped += static_cast<int64_t>(unstable[i].size());
  }
  const int64_t tests = static_cast<int64_t>(run.checks.size()) + (extra_failure ? 1 : 0) + skipped;
  failures += extra_failure ? 1 : 0;
  const std::string suite = report_util::junit_suite(report);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"golden-validator\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n",
                     tests, failures);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                     xml_escape(suite), tests, failures, skipped);
  out += "    <properties>\n";
  for (const ReportInput& in : run.inputs) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(in.role),
                       xml_escape(in.path));
    if (!in.sha256.empty()) {
      out += fmt::format("      <property name=\"{}.sha256\" value=\"{}\"/>\n",
                         xml_escape(in.role), xml_escape(in.sha256));
    }
  }
  out += fmt::format("      <property name=\"policy\" value=\"{}\"/>\n", xml_escape(report_util::policy_text(report.policy)));
  if (!report.policy.sha256.empty()) {
    out += fmt::format("      <property name=\"policy.sha256\" value=\"{}\"/>\n", report.policy.sha256);
  }
  out += fmt::format("      <property name=\"tool_version\" value=\"{}\"/>\n",
                     xml_escape(report.tool_version));
  if (!report.command_line.empty()) {
    out += fmt::format("      <property name=\"command_line\" value=\"{}\"/>\n",
                       xml_escape(report_util::command_line_text(report.command_line)));
  }
  out += fmt::format("      <property name=\"summary\" value=\"{}\"/>\n", xml_escape(ev.summary.message));
  if (const std::string slice = report_util::slice_text(report); !slice.empty()) {
    out += fmt::format("      <property name=\"slice\" value=\"{}\"/>\n", xml_escape(slice));
  }
  for (const ReportView& v : run.views) {
    out += fmt::format("      <property name=\"view:{}\" value=\"{}. Inputs: {}\"/>\n", xml_escape(v.mode),
                       xml_escape(v.answers), xml_escape(report_util::feeds_text(v)));
  }
  if (!report.views_finding.empty()) {
    out += fmt::format("      <property name=\"views_finding\" value=\"{}\"/>\n",
                       xml_escape(report.views_finding));
  }
  for (const ReportShard& sh : run.shards) {
    out += fmt::format("      <property name=\"shard:{}\" value=\"{} {}\"/>\n", xml_escape(sh.id),
                       xml_escape(sh.fingerprint), xml_escape(sh.path));
  }
  out += "    </properties>\n";
  for (size_t i = 0; i < run.checks.size(); ++i) {
    const CheckResult& c = run.checks[i];
    const CheckVerdict& v = ev.checks[i];
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\">", xml_escape(suite),
                       xml_escape(c.identity.id()));
    if (is_unjudged(v.verdict)) {
      // Measured, judged by nothing: visible in CI, never a failure.
      out += fmt::format("\n      <skipped message=\"{}\"/>\n    ", xml_escape(v.message));
    } else if (v.verdict != Verdict::kPass) {
      std::string detail;
      for (const MetricVerdict& mv : v.metrics) {
        const std::string value =
            mv.metric == Metric::kNormRatio
                ? "[" + report_util::fmt_gated(&mv, mv.value, 6) + ", " +
                      report_util::fmt_gated(&mv, mv.value_upper, 6) + "]"
                : report_util::fmt_gated(&mv, mv.value, 6);
        detail += fmt::format("{} {} = {} ({})\n", metric_name(mv.metric), mv.statistic, value,
                              verdict_name(mv.verdict));
      }
      out += fmt::format("\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    ",
                         verdict_name(v.verdict), xml_escape(v.message), xml_escape(detail));
    }
    out += "</testcase>\n";
    for (const report_util::UnstableRow& u : unstable[i]) {
      out += fmt::format("    <testcase classname=\"{}\" name=\"{} {}\">\n      <skipped message=\"{}\"/>\n"
                         "    </testcase>\n",
                         xml_escape(suite), xml_escape(c.identity.id()), xml_escape(u.place),
                         xml_escape(u.text()));
    }
  }
  if (extra_failure) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"summary\">\n      <failure type=\"{}\" "
                       "message=\"{}\"/>\n    </testcase>\n",
                       xml_escape(suite), verdict_name(ev.summary.verdict),
                       xml_escape(ev.summary.message));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace sg
