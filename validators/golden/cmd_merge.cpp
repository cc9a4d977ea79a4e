// golden-validator merge: the JSON reports of the jobs of one CI fan-out (golden-validator
// run --teacher-forced, or ane-validator, each with --shard-index/--shard-count) combined into
// the report one job would have written (merge_golden_reports, merge_residency_reports). Both tools' reports are merged here,
// so ane-validator keeps its one-command CLI; the kind is read from each report.
// Exit codes: the merged verdict's (0 pass, 1 gate failed), 2 bad input or slices that are not
// one run (mixed tools, another chain, overlap, a slice missing).
#include "common/args.h"
#include "common/golden_args.h"
#include "golden/commands.h"
#include "shardgate/gate_report.h"
#include "shardgate/io.h"
#include "shardgate/limits.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_envelope.h"
#include "shardgate/residency_report.h"
#include "shardgate/report_output.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <variant>

namespace sg::golden_cli {
namespace {

struct MergeOptions {
  std::vector<std::string> reports;
  cli::ReportArgs outputs;
  cli::GoldenOutputArgs output;  // --all-positions, --no-color (--html: golden reports only)
  cli::LogArgs log;
};

enum class Kind { kGolden, kAne };

const char* kind_name(Kind k) { return k == Kind::kGolden ? "golden-validator" : "ane-validator"; }

int merge_ane(const SliceReports<ResidencyReport>& slices, const MergeOptions& o) {
  auto merged = merge_residency_reports(slices);
  if (!merged) return cli::report_error(merged.status());
  merged->command_line = cli::command_line();
  // Written first: a format the report has no form of (--html) is refused before any output.
  if (Status s = o.outputs.write(*merged); !s.is_ok()) {
    return cli::report_error(s);
  }
  const int level = o.log.level();
  for (const ShardCheck& s : merged->shards) {
    const bool ok = !s.error && s.verdict.passed;
    if (level >= 0 || !ok) std::cout << residency_summary_line(s) << "\n" << residency_failure_lines(s);
  }
  const int code = residency_exit_code(*merged);
  const ResidencyCounts counts = residency_counts(*merged);
  std::cout << fmt::format("merge: {} slice(s) of ane-validator: {} shard(s): {}, {} failed, "
                           "{} error(s) -> exit {}\n",
                           slices.size(), counts.shards, residency_passed_text(counts),
                           counts.failed, counts.errors, code);
  return code;
}

int run_merge(const MergeOptions& o) {
  if (Status s = o.log.validate(); !s.is_ok()) return cli::report_error(s);
  SliceReports<GoldenReport> golden;
  SliceReports<ResidencyReport> ane;
  std::string first_of_kind[2];
  for (const std::string& path : o.reports) {
    auto text = read_file(path, limits::kReportBytes, "report");
    if (!text) return cli::report_error(text.status());
    auto report = parse_gate_report_json(*text, path);
    if (!report) return cli::report_error(report.status());
    const Kind kind = std::holds_alternative<GoldenReport>(*report) ? Kind::kGolden : Kind::kAne;
    if (first_of_kind[static_cast<int>(kind)].empty()) first_of_kind[static_cast<int>(kind)] = path;
    if (auto* g = std::get_if<GoldenReport>(&*report)) {
      golden.emplace_back(path, std::move(*g));
    } else {
      ane.emplace_back(path, std::move(std::get<ResidencyReport>(*report)));
    }
  }
  if (!golden.empty() && !ane.empty()) {
    return cli::report_error(make_error(
        ErrorCode::kUsage, "merge: mixed tools: {} is a {} report, {} an {} report; merge the "
        "slices of one run of one tool",
        first_of_kind[0], kind_name(Kind::kGolden), first_of_kind[1], kind_name(Kind::kAne)));
  }
  if (!ane.empty()) {
    return merge_ane(ane, o);
  }
  auto merged = merge_golden_reports(golden);
  if (!merged) return cli::report_error(merged.status());
  merged->command_line = cli::command_line();
  return cli::emit_golden_report(*merged, o.outputs, o.output, o.log);
}

}  // namespace

void add_merge_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* sub = app.add_subcommand(
      "merge",
      "Combine the JSON reports of the slices of one CI fan-out (run --teacher-forced or "
      "ane-validator with --shard-index/--shard-count) into the report of a single job");
  sub->add_option("reports", options->reports,
                  "The JSON report of every slice (any order; all of one tool and one run)")
      ->option_text("REPORT.json...")
      ->required();
  options->outputs.add_to(*sub);
  options->output.add_to(*sub);
  options->log.add_to(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_merge(*options); }; });
}

}  // namespace sg::golden_cli
