// Golden reports (golden_report.h): gating a run into a report, regating, exit codes and
// atomic report files.
#include "shardgate/golden_report.h"

#include "shardgate/io.h"

namespace sg {

Result<GoldenReport> make_golden_report(FidelityRun run, GatePolicy policy, bool strict,
                                        std::string tool_version) {
  GoldenReport report;
  report.tool_version = std::move(tool_version);
  SG_ASSIGN_OR_RETURN(report.evaluation, evaluate_gate(run, policy, strict));
  report.run = std::move(run);
  report.policy = std::move(policy);
  report.strict = strict;
  return report;
}

Result<GoldenReport> regate_report(const GoldenReport& report, GatePolicy policy, bool strict) {
  return make_golden_report(report.run, std::move(policy), strict, report.tool_version);
}

int report_exit_code(const GoldenReport& report) {
  return report.evaluation.summary.verdict == Verdict::kPass ? kExitPass : kExitGateFailed;
}

Status write_report_file(const std::string& path, std::string_view contents) {
  Status s = write_file_atomic(path, contents);
  if (!s.is_ok()) return std::move(s).with_context("writing report " + path);
  return s;
}

}  // namespace sg
