// golden-validator regate: re-applies thresholds to a saved JSON report, from the per-row
// metric values it stores, without re-running anything.
#include "common/golden_args.h"
#include "golden/commands.h"
#include "shardgate/golden_report.h"
#include "shardgate/io.h"
#include "shardgate/limits.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

namespace sg::golden_cli {
namespace {

struct RegateOptions {
  std::string report;
  cli::ReportArgs reports;
  cli::GateArgs gate;
  cli::LogArgs log;
  cli::ThresholdArgs thresholds;
  cli::GoldenOutputArgs output;
};

int run_regate(const RegateOptions& o) {
  if (Status s = o.log.validate(); !s.is_ok()) return cli::report_error(s);
  auto text = read_file(o.report, limits::kReportBytes, "report");
  if (!text) return cli::report_error(text.status());
  auto saved = parse_golden_report_json(*text, o.report);
  if (!saved) return cli::report_error(saved.status());
  // Without --gate the saved policy stays, so a bare `--min-cosine` tweaks only what it names.
  GatePolicy policy = saved->policy;
  if (!o.gate.gate_file.empty()) {
    auto loaded = load_gate_policy(o.gate.gate_file);
    if (!loaded) return cli::report_error(loaded.status());
    policy = std::move(*loaded);
  }
  if (Status s = o.thresholds.apply(policy); !s.is_ok()) return cli::report_error(s);
  auto report = regate_report(*saved, std::move(policy), o.gate.strict || saved->strict);
  if (!report) return cli::report_error(report.status());
  if (!saved->saved_culprit_search.empty()) {
    // The saved search looked at the first failing check of the saved gate, which this one may
    // move: it is not carried, and the note says so instead of dropping it silently.
    report->culprits_note = fmt::format(
        "not carried over: the saved report's culprit search searched the first failing check "
        "under its own gate ({}); run `golden-validator run --culprits` to search under this one",
        saved->saved_culprit_search);
  }
  report->run.inputs.push_back({"report", o.report, sha256_hex(std::as_bytes(std::span<const char>(text->data(), text->size())))});
  report->tool_version = cli::kGoldenValidatorVersion;
  report->command_line = cli::command_line();  // the shards and inputs of the saved run stay
  return cli::emit_golden_report(*report, o.reports, o.output, o.log);
}

}  // namespace

void add_regate_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<RegateOptions>();
  CLI::App* sub = app.add_subcommand(
      "regate", "Apply new thresholds to a saved JSON report without re-running");
  sub->add_option("report", options->report, "A JSON report written by golden-validator --json")
      ->option_text("REPORT.json")
      ->required();
  options->reports.add_to(*sub);
  options->gate.add_to(*sub, sg::cli::kGoldenStrictHelp);
  options->log.add_to(*sub);
  options->thresholds.add_to(*sub);
  options->output.add_to(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_regate(*options); }; });
}

}  // namespace sg::golden_cli
