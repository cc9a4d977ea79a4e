// Markdown summary of a golden report for CI job pages: verdict, first failure, one table row
// per check in layer order, the failures, the rows excluded as unstable (probe) with their
// margins, and the policy that decided.
#include "report/golden_report_util.h"

namespace sg {

std::string golden_report_markdown(const GoldenReport& report) {
  using report_util::fmt_num;
  using report_util::md_code;
  using report_util::md_escape;
  const FidelityRun& run = report.run;
  const GateEvaluation& ev = report.evaluation;
  const bool pass = ev.summary.verdict == Verdict::kPass;
  if (report.error) {
    std::string out = fmt::format("## golden-validator {}: ⛔ ERROR (exit {})\n\n{}: {}\n\n",
                                  run.command, report.error->exit_code, report.error->kind,
                                  md_escape(report.error->message));
    out += fmt::format("- tool: golden-validator {}\n", report.tool_version);
    if (!report.command_line.empty()) {
      out += fmt::format("- command line: {}\n", md_code(report_util::command_line_text(report.command_line)));
    }
    return out;
  }
  std::string out = fmt::format("## golden-validator {}: {}\n\n", report_util::command_text(report),
                                is_empty_slice(report) ? "⏭️ EMPTY SLICE"
                                : pass                 ? "✅ PASS"
                                                       : "❌ FAIL");
  out += md_escape(ev.summary.message) + "\n\n";
  for (const ReportInput& in : run.inputs) {
    out += fmt::format("- {}: {}{}\n", in.role, md_code(in.path),
                       in.sha256.empty() ? "" : " (sha256 `" + in.sha256.substr(0, 12) + "`)");
  }
  if (const std::string slice = report_util::slice_text(report); !slice.empty()) {
    out += fmt::format("- {}\n", md_escape(slice));
  }
  out += report.policy.sha256.empty()
             ? fmt::format("- policy: {}{}\n", md_code(report.policy.source), report_util::policy_note(report.policy))
             : fmt::format("- policy: {}{} (sha256 `{}`)\n", md_code(report.policy.source),
                           report_util::policy_note(report.policy), report.policy.sha256.substr(0, 12));
  out += fmt::format("- tool: golden-validator {}\n", report.tool_version);
  if (!report.command_line.empty()) {
    out += fmt::format("- command line: {}\n", md_code(report_util::command_line_text(report.command_line)));
  }
  if (!run.shards.empty()) {
    out += fmt::format("- shards executed{} ({}), by fingerprint (sha256 over program and weights):\n",
                       report_util::is_regated(report) ? " by the saved run" : "", run.shards.size());
    for (const ReportShard& sh : run.shards) {
      out += fmt::format("  - {}: {} `{}`\n", md_code(sh.id), md_code(sh.path), sh.fingerprint);
    }
  }
  for (const ReportView& v : run.views) {
    out += fmt::format("- view **{}**: {}. Inputs: {}\n", v.mode, md_escape(v.answers),
                       md_escape(report_util::feeds_text(v)));
  }
  if (!report.views_finding.empty()) out += fmt::format("- **{}**\n", md_escape(report.views_finding));
  out += "\n";
  out += fmt::format("| layer | check | kind | cosine {} | worst pos | norm ratio | rel L2 | top-1 | verdict |\n",
                     report_util::cosine_statistic(report));
  out += "|---:|---|---|---:|---:|---|---:|---:|---|\n";
  for (size_t i : report_util::layer_order(run)) {
    const CheckResult& c = run.checks[i];
    const CheckVerdict& v = ev.checks[i];
    const MetricVerdict* cos = report_util::find_metric(v, Metric::kCosine);
    const MetricVerdict* norm = report_util::find_metric(v, Metric::kNormRatio);
    const MetricVerdict* rel = report_util::find_metric(v, Metric::kRelL2);
    const MetricVerdict* top1 = report_util::find_metric(v, Metric::kTop1);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                       report_util::layer_text(c.identity), md_escape(c.identity.id()),
                       md_escape(c.identity.kind), report_util::cosine_value_text(report, i),
                       cos && cos->worst_position >= 0 ? std::to_string(cos->worst_position) : "-",
                       norm ? "[" + report_util::fmt_gated(norm, norm->value, 4) + ", " + report_util::fmt_gated(norm, norm->value_upper, 4) + "]" : "-",
                       report_util::fmt_gated(rel, rel ? rel->value : std::nullopt),
                       fmt_num(top1 ? top1->value : std::nullopt, 2),
                       v.verdict == Verdict::kPass || is_unjudged(v.verdict)
                           ? std::string(verdict_name(v.verdict))
                           : "**" + std::string(verdict_name(v.verdict)) + "**");
  }
  bool any_failure = false;
  for (size_t i = 0; i < run.checks.size(); ++i) {
    if (ev.checks[i].verdict == Verdict::kPass || is_unjudged(ev.checks[i].verdict)) continue;
    if (!any_failure) out += "\n### Failures\n\n";
    any_failure = true;
    out += fmt::format("- {}: {}\n", md_code(run.checks[i].identity.id()), md_escape(ev.checks[i].message));
  }
  bool any_excluded = false;
  for (size_t i = 0; i < run.checks.size(); ++i) {
    if (ev.checks[i].verdict != Verdict::kExcluded) continue;
    if (!any_excluded) {
      out += "\n### Excluded from the gate\n\nThese tensors depend on random ops; a device draws "
             "other numbers than this tool's documented seeded generator, so their metrics are "
             "shown but judge nothing.\n\n";
    }
    any_excluded = true;
    out += fmt::format("- {}: {}\n", md_code(run.checks[i].identity.id()), md_escape(ev.checks[i].message));
  }
  bool any_unstable = false;
  for (size_t i : report_util::layer_order(run)) {
    for (const report_util::UnstableRow& u : report_util::unstable_rows(report, i)) {
      if (!any_unstable) {
        out += "\n### Unstable rows (excluded from the gate)\n\nThe FP16 baseline itself moves more "
               "than the gate allows on these inputs (a near tie, e.g. an MoE router): they "
               "measure the input, not quantization error.\n\n";
      }
      any_unstable = true;
      out += fmt::format("- {} {}\n", md_code(run.checks[i].identity.id()), md_escape(u.text()));
    }
  }
  if (!run.reference_only.empty()) {
    out += fmt::format("\nNot in candidate: {}\n", md_escape(fmt::format("{}", fmt::join(run.reference_only, ", "))));
  }
  if (report.culprits) {
    out += "\n" + culprit_report_markdown(*report.culprits, 10);
  } else if (!report.culprits_note.empty()) {
    out += fmt::format("\nCulprit search: {}\n", md_escape(report.culprits_note));
  }
  return out;
}

}  // namespace sg
