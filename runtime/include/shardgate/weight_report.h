// Reports of the weight diagnostics (`golden-validator weights`): JSON (schema
// reports/schema/weight-diagnostics.schema.json), terminal table, Markdown and JUnit.
#pragma once

#include "shardgate/report_envelope.h"
#include "shardgate/weight_diagnostics.h"

#include <string>
#include <vector>

namespace sg {

// "shardgate/weight-diagnostics@2". 2: the shared envelope (report_envelope.h): verdict "fail"
// when a weight is flagged (exit 1), "no_evidence" when no shard has a compressed weight
// (nothing was diagnosed, so nothing passed: exit 1), else "pass"; shards and baselines under
// provenance.
inline constexpr int kWeightReportVersion = 2;

struct WeightReport {
  std::string tool_version;
  std::vector<std::string> command_line;  // argv of the process (empty when built in-process)
  std::vector<WeightDiagnosticsResult> shards;
  int64_t flagged() const;  // weights with at least one flag, over all shards
  int64_t weights() const;  // compressed weights diagnosed, over all shards
  // "flagged" when any weight is flagged, "nothing checked" when no shard has a compressed
  // weight, else "clean".
  std::string verdict() const;
  int exit_code() const;  // 0 clean, 1 flagged or nothing checked
};

// Two-space indented JSON; non-finite statistics are the strings "nan", "inf", "-inf".
ReportEnvelope weight_report_envelope(const WeightReport& report);
std::string weight_report_json(const WeightReport& report);
// Per shard: one line per weight (form, effective bits, outlier ratio, estimated / measured
// error, flags); `all` lists unflagged weights too (else only flagged ones and a count).
std::string weight_report_table(const WeightReport& report, bool all);
std::string weight_report_markdown(const WeightReport& report);
// One <testcase> per weight; a flagged weight is a <failure> carrying the flag messages.
std::string weight_report_junit(const WeightReport& report);

}  // namespace sg
