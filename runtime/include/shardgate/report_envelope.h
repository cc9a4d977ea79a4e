// The report envelope: every JSON report of both tools (ane-validator, golden-validator run /
// compare / probe / regate / merge / weights / culprits / diff) opens with the same fields, in
// the same order, so one reader can tell what made a report, what it concluded and exactly what
// it judged without knowing which tool wrote it:
//
//   schema_version  "shardgate/<kind>@<N>": <kind> names the schema file
//                   reports/schema/<kind>.schema.json, N its version
//   tool            {"name", "version"}
//   command         the subcommand ("check" for ane-validator's gate)
//   command_line    argv of the process (empty when built in-process)
//   verdict         "pass" | "fail" | "error" | "empty-slice" | "diagnosis"
//   exit_code       what the tool exited with (README "Exit codes")
//   provenance      {"gate": {path, sha256} or null, "inputs": [{role, path, sha256}],
//                    "shards": [{path, fingerprint, id?}]}
//
// reports/schema/report-envelope.schema.json is the contract; every report schema includes it.
#pragma once

#include "shardgate/provenance.h"
#include "shardgate/status.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

struct ReportEnvelope {
  std::string kind;  // schema file stem: "ane-report", "golden-report", "weight-diagnostics", ...
  int version = 0;
  std::string tool;  // "ane-validator" or "golden-validator"
  std::string tool_version;
  std::string command;
  std::vector<std::string> command_line;
  std::string verdict;
  int exit_code = 0;
  ReportProvenance provenance;

  // A gate's outcome: verdict "pass" with exit 0, or "fail" with exit 1.
  void set_gate_verdict(bool passed) {
    verdict = passed ? "pass" : "fail";
    exit_code = passed ? 0 : 1;
  }
};

// What made a report of `kind` at `version`; the writer adds the verdict, exit code and
// provenance.
ReportEnvelope make_report_envelope(std::string_view kind, int version, std::string_view tool,
                                    std::string tool_version, std::string_view command,
                                    std::vector<std::string> command_line);

// The verdicts an envelope may carry, as the schema's enum lists them (a test compares the
// two). "no_evidence": nothing could be judged (every check excluded, nothing compared);
// "diagnosis": a command that diagnoses and gates nothing (culprits) ran to the end.
inline constexpr std::string_view kReportVerdicts[] = {"pass",        "fail",        "no_evidence",
                                                       "error",       "empty-slice", "diagnosis"};

// Reports read from files, each with the file it was read from (merge takes these).
template <typename Report>
using SliceReports = std::vector<std::pair<std::string, Report>>;

// "shardgate/<kind>@<version>".
std::string report_schema_version(std::string_view kind, int version);

// Reads the envelope of a JSON report. kFormat naming `path` and the field when the text is not
// a shardgate report, or is one written before the envelope (schema_version an integer, or a
// report without "provenance"): the message says to re-run the tool that wrote it.
Result<ReportEnvelope> parse_report_envelope(std::string_view json_text, const std::string& path);

}  // namespace sg
