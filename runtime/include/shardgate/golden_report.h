// Fidelity reports: one gated run rendered as JSON (the versioned contract, schema in
// reports/schema/golden-report.schema.json), a terminal table, JUnit XML, Markdown and a
// self-contained HTML page. JSON keeps every per-row metric value so `regate` can re-apply new
// thresholds without re-running; no tensor data is ever embedded.
#pragma once

#include "shardgate/culprit_report.h"
#include "shardgate/fidelity.h"
#include "shardgate/gate_policy.h"
#include "shardgate/report_envelope.h"
#include "shardgate/status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

// The JSON report's schema: "shardgate/golden-report@2" (reports/schema/golden-report.schema.json).
// 2: the shared envelope (shardgate/report_envelope.h): verdict and exit_code at the top,
// inputs, shards and the gate file under provenance.
inline constexpr std::string_view kGoldenReportKind = "golden-report";
inline constexpr int kGoldenReportVersion = 2;

struct GoldenReport {
  std::string tool_version;  // shardgate version string
  // The command line of the process that wrote this report (argv, unquoted), or empty when
  // the report was built in-process (tests). Together with the inputs' sha256 and the shard
  // fingerprints this is the report's provenance.
  std::vector<std::string> command_line;
  // What the views of a run say together (set when both free-running and teacher-forced ran):
  // "views disagree: accumulated drift from layer L: ...", "a shard fails on its own ...", or
  // "views agree ...". Empty otherwise. See views_finding().
  std::string views_finding;
  // Set when the command stopped on an error (exit 2 or 3) before any verdict: the reports are
  // still written, with the error as their verdict (JSON summary verdict "error", JUnit
  // <error>), so a CI report step always finds them.
  struct Error {
    std::string kind;     // error_code_name(): "usage error", "format error", ...
    std::string message;
    int exit_code = 2;
  };
  std::optional<Error> error;
  // run --culprits: the culprit op search on the shard steps of the first failing check (the
  // same document `golden-validator culprits --json` writes, embedded as "culprits"), or why
  // none ran (culprits_note, e.g. "no check failed"). Absent when not asked for.
  std::optional<CulpritReport> culprits;
  std::string culprits_note;
  // Read back from a saved report that carries a culprit search: its culprits_note ("a culprit
  // search" when it has none). The reader does not parse culprit results, and a search belongs
  // to the gate and slice that ran it, so merge and regate write a culprits_note saying where
  // the search is instead of silently dropping it. Never written.
  std::string saved_culprit_search;
  FidelityRun run;
  GatePolicy policy;
  bool strict = false;
  GateEvaluation evaluation;
};

// What a teacher-forced verdict covers, and what it does not (the summary's label).
inline constexpr std::string_view kTeacherForcedScope =
    "teacher-forced view: each shard's own error on golden inputs; accumulated drift is not "
    "covered (run --both)";

// The finding of a run with both views: compares each checkpoint's verdict in the two views.
// A checkpoint that fails free-running and passes teacher-forced is accumulated drift; it is
// reported "from layer L", L being the first layer from which the free-running error
// (1 − gated cosine) is more than twice the layer's own (teacher-forced) error — up to there
// the chain's error is the layers' own, from there the error carried in from upstream
// dominates (the layer of the first disagreeing checkpoint when no layer shows that).
std::string views_finding(const FidelityRun& run, const GateEvaluation& evaluation);

// Builds a report: evaluates `policy` over `run`; labels the summary of a teacher-forced-only
// run with kTeacherForcedScope and appends the views finding of a run with both views.
Result<GoldenReport> make_golden_report(FidelityRun run, GatePolicy policy, bool strict,
                                        std::string tool_version);
// Re-evaluates an existing report under another policy (what `regate` does).
Result<GoldenReport> regate_report(const GoldenReport& report, GatePolicy policy, bool strict);

// The report of a command that stopped on `status` (see GoldenReport::error).
GoldenReport golden_error_report(const std::string& command, const Status& status,
                                 std::string tool_version);

// A CI slice that selected nothing to run (RunSlice::empty()): its verdict is "empty-slice"
// (JSON verdict, JUnit a skipped case, Markdown, HTML, terminal), its summary message
// the slice's note, its exit code 0. Not a gate pass: `merge` needs the other slices.
bool is_empty_slice(const GoldenReport& report);
// "pass", "fail", "no_evidence", ..., "empty-slice" or "error": the summary verdict as reported.
std::string report_verdict_name(const GoldenReport& report);

// Process exit code of a report: 0 when the summary verdict is pass or empty-slice, else 1.
int report_exit_code(const GoldenReport& report);
// The report's envelope: verdict and exit code as above, the gate file (policy.source and its
// sha256; none for the built-in policy), the inputs and the shards the run judged.
ReportEnvelope golden_report_envelope(const GoldenReport& report);

// JSON (two-space indent, stable key order). Non-finite metric values are the strings "inf",
// "-inf" or "nan"; absent values are omitted.
std::string golden_report_json(const GoldenReport& report);
// Reads a report written by golden_report_json (the per-row values, options, inputs and the
// policy). The saved verdicts are not trusted: the evaluation is recomputed from the per-row
// values under the saved policy. kFormat errors name `path` and the JSON place.
Result<GoldenReport> parse_golden_report_json(std::string_view json_text, const std::string& path);

struct TableOptions {
  bool color = false;       // ANSI colours for verdicts
  bool unicode = true;      // sparkline blocks; ASCII fallback otherwise
  bool all_positions = false;  // list every position of every check, not only logits
  bool list_shards = false;    // one line per executed shard with its fingerprint (else a count)
};
// One line per check (min cosine, worst position, norm ratio range, verdict), logits per
// position, and a compact per-layer trend (sparkline of min cosine) that shows where a drop
// starts.
std::string golden_report_table(const GoldenReport& report, const TableOptions& options = {});
// One <testcase> per check.
std::string golden_report_junit(const GoldenReport& report);
// Summary for CI job pages.
std::string golden_report_markdown(const GoldenReport& report);
// Self-contained page: per-layer × per-position cosine heat map and per-layer line chart,
// inline SVG, no external assets.
std::string golden_report_html(const GoldenReport& report);

// Writes `contents` atomically (write_file_atomic) with the path in any error.
Status write_report_file(const std::string& path, std::string_view contents);

// Merging the JSON reports of the jobs of one CI fan-out (README "Fan-out across CI jobs") into
// the report a single job would have written (`golden-validator merge`). The merged report goes
// through the same writers as a single run, so its JSON, JUnit, Markdown and HTML equal that
// run's except for what is inherently per process: the command line, the run id and the
// peak-memory note (kept per slice job). Refused (kUsage, naming the files): slices of
// different runs (another chain, golden dump, gate, options, tool version), two reports of one
// slice or of one step group (overlap), a slice missing, and reports that are not slices
// (free-running reports). The result's command_line is empty: the caller records its own.
Result<GoldenReport> merge_golden_reports(const SliceReports<GoldenReport>& slices);

}  // namespace sg
