// Regressions between two reports of the same tool (`golden-validator diff OLD.json NEW.json`):
// per checkpoint (golden-validator reports) or per shard and op (ane-validator reports), what
// got worse and by how much, even when both pass; a regression is a change beyond the
// tolerances of a regression gate (gates/regression.json), or a verdict going from pass to
// fail, or a check / shard that disappeared.
#pragma once

#include "shardgate/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sg {

inline constexpr const char* kRegressionGateSchema = "shardgate/regression-gate@1";

struct RegressionTolerance {
  double value = 0;
  std::string reason;
};

// gates/regression.json: tolerance per metric name ("cosine", "snr_db", "rel_l2", "max_abs",
// "norm_ratio", "top1", "topk_overlap", "kl") and for ane-validator reports "residency_pct"
// (percentage points) and "placement" (0: any op moving away from the ANE regresses).
// "shardgate/report-diff@2". 2: the shared envelope (report_envelope.h): verdict "fail" on a
// regression (exit 1), else "pass"; both reports and the regression gate under provenance.
inline constexpr int kReportDiffVersion = 2;

struct RegressionPolicy {
  std::map<std::string, RegressionTolerance> tolerances;
  std::string path;    // "" for a policy built in memory
  std::string sha256;  // of the file
  // The accepted report new ones are compared with when diff is given only NEW.json
  // ("baseline": {"report": PATH, "reason": ...}; PATH relative to the gate file's directory,
  // resolved here). "" when the gate names none.
  std::string baseline;
  std::string baseline_reason;
};

// Reads a regression gate file. Unknown keys, negative or non-numeric tolerances and missing
// reasons are kFormat errors naming the file and the key.
Result<RegressionPolicy> load_regression_policy(const std::string& path);

struct DiffRow {
  std::string item;    // check id (golden) or shard name (ane)
  std::string what;    // "cosine min", "verdict", "residency_pct", "op #13 linear 'router'", ...
  std::string old_value, new_value;
  double worse_by = 0;  // > 0 when worse, in the quantity's own units
  bool regression = false;
  std::string why;     // for regressions: the tolerance exceeded or the rule broken
};

struct ReportDiff {
  std::string tool;  // "golden-validator" or "ane-validator"
  std::string old_path, new_path;
  std::string old_sha256, new_sha256;
  std::vector<DiffRow> rows;  // every quantity that changed, worse or better
  int64_t compared = 0;       // quantities present in both reports
  int64_t regressions() const;
  int64_t worse() const;      // rows with worse_by > 0
};

// A diff as `golden-validator diff` reports it (report_formats.h renders it): the comparison,
// the regression gate applied, and the process that ran it.
struct DiffReport {
  ReportDiff diff;
  RegressionPolicy policy;
  std::vector<std::string> command_line;
  std::string tool_version;
};

// Diffs two JSON reports of the same tool. kFormat when a report is not one the tools write
// or the two come from different tools.
Result<ReportDiff> diff_reports(const std::string& old_path, const std::string& new_path,
                                const RegressionPolicy& policy);

// Report forms of a diff (schema reports/schema/report-diff.schema.json).
std::string report_diff_json(const ReportDiff& diff, const RegressionPolicy& policy,
                             const std::vector<std::string>& command_line,
                             const std::string& tool_version);
std::string report_diff_table(const ReportDiff& diff, bool all);
std::string report_diff_markdown(const ReportDiff& diff);
std::string report_diff_junit(const ReportDiff& diff);

}  // namespace sg
