// ane-validator reports: versioned JSON (reports/schema/ane-report.schema.json), JUnit XML,
// a Markdown summary, and the terminal summary lines and op table. No tensors are embedded.
#pragma once

#include "shardgate/placement.h"
#include "shardgate/report_envelope.h"
#include "shardgate/status.h"

#include <string>
#include <string_view>
#include <vector>

namespace sg {

// The JSON report's schema: "shardgate/ane-report@3" (reports/schema/ane-report.schema.json).
// Bump when a field changes meaning or disappears; adding fields keeps the version.
// 2: residency_pct, residency_low_pct and cost_weighted_pct are over the body (boundary casts
// apart); shards carry their fingerprint, the report the gate file's sha256.
// 3: the shared envelope (shardgate/report_envelope.h): schema_version a string, tool an object,
// command and command_line, the gate file and the shards under provenance.
inline constexpr std::string_view kResidencyReportKind = "ane-report";
inline constexpr int kResidencyReportVersion = 3;

struct ResidencyReport {
  std::string tool = "ane-validator";
  std::string tool_version;
  // "check". A merge of slices is the report one job would have written, so it keeps "check";
  // its command_line (golden-validator merge SLICE.json...) names the slice reports.
  std::string command = "check";
  std::vector<std::string> command_line;  // argv; empty when built in-process
  // Chain manifests given as shards (role "chain"); plan dumps are listed per shard.
  std::vector<ReportInput> inputs;
  std::string gate_file;         // the policy applied ("" = built-in default)
  std::string gate_file_sha256;  // sha256 of the gate file's bytes ("" for the built-in default)
  bool fingerprinted = true;     // shard fingerprints computed (ane-validator --no-fingerprint: no)
  bool strict = false;
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  // The whole shard list the slice was cut from (after expansion, sorted): its size and the
  // sha256 of the paths joined by '\n', so `merge` can tell slices of one run. 0 / "" when the
  // report was built in-process.
  int64_t shards_total = 0;
  std::string shard_list_sha256;
  std::vector<ShardCheck> shards;
};

// sha256 of the expanded shard list (paths joined by '\n'): ResidencyReport::shard_list_sha256.
std::string shard_list_sha256(const std::vector<std::string>& paths);

// A CI slice that selected none of the shards (more slices than shards): verdict
// "empty-slice", exit 0, never a gate pass. See SelectionArgs::empty_note for its note.
bool residency_empty_slice(const ResidencyReport& report);
// "slice I of N selects none of the M shards: nothing to check in this job".
std::string residency_empty_note(const ResidencyReport& report);
// The report's verdict: residency_verdict_name(exit code), or "empty-slice".
std::string residency_report_verdict(const ResidencyReport& report);

// Reads a report written by residency_report_json back (merge): every field the writer takes
// from a ShardCheck; what it derives (names, verdict words, rules used) is derived again, so
// residency_report_json(parsed) equals the text read. kFormat errors name `path` and the JSON
// place.
Result<ResidencyReport> parse_residency_report_json(std::string_view json_text,
                                                    const std::string& path);

// "pass", "fail" or "error" for one shard.
const char* shard_verdict(const ShardCheck& shard);
// The report's shard paths, in its order.
std::vector<std::string> shard_paths(const ResidencyReport& report);
// 0 all passed (or an empty slice), 1 a gate failed, 2 a shard or plan could not be read or no
// shard was checked.
int residency_exit_code(const ResidencyReport& report);
// "pass" (exit 0), "fail" (exit 1) or "error" (any other exit code): the run's verdict.
const char* residency_verdict_name(int exit_code);

// Shards of a report by verdict (shard_verdict).
struct ResidencyCounts {
  int64_t shards = 0, passed = 0, failed = 0, errors = 0;
  // Of `passed`: shards whose model verdict is "at risk" (ops counted on the ANE that the rules
  // or the plan do not place there plainly): the summary line says so beside the pass.
  int64_t passed_at_risk = 0;
};
// "3 passed" or "3 passed (2 of them at risk: --strict fails them)".
std::string residency_passed_text(const ResidencyCounts& counts);
ResidencyCounts residency_counts(const ResidencyReport& report);

// The report's envelope: verdict and exit code, the gate file, the plan dumps and merged
// reports read, and every shard with its fingerprint.
ReportEnvelope residency_report_envelope(const ResidencyReport& report);
std::string residency_report_json(const ResidencyReport& report);
std::string residency_report_junit(const ResidencyReport& report);
std::string residency_report_markdown(const ResidencyReport& report);
// One shard's "summary" object of the JSON report, as JSON text (the Python binding returns it).
std::string residency_summary_json(const ResidencySummary& summary);

// One line per shard: verdict, counts, residency, threshold, placement source.
std::string residency_summary_line(const ShardCheck& shard);
// The dump a plan-based verdict rests on: "plan PATH (sha256 12 hex digits), matched by ..."
// (plan_match_basis). Only for a shard with a plan.
std::string residency_plan_line(const ShardCheck& shard);
// The gate failures / error of a shard, one indented line each ("" when it passed).
std::string residency_failure_lines(const ShardCheck& shard);
// The rules (deciding and overlay) that fired on a shard's rows, in first-use order, with
// how many rows each decided or raised.
struct RuleUse {
  std::string id;
  int64_t ops = 0;
};
std::vector<RuleUse> rules_used(const ShardCheck& shard);

// The full op table of a shard (--ops), each row with its rule's confidence, then the rules
// used with their placement, confidence and source.
std::string residency_op_table(const ShardCheck& shard);

// ane-validator --shard-index/--shard-count slices back into the report one job would have
// written (`golden-validator merge`): shards ordered by path as ane-validator orders its
// expanded list. Refused (kUsage, naming the files): slices of different runs (another shard
// list, gate file, options or tool version), overlap, a slice missing.
Result<ResidencyReport> merge_residency_reports(const SliceReports<ResidencyReport>& slices);

}  // namespace sg
