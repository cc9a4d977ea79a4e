// golden-validator diff: regressions between two JSON reports of one tool (report_diff.h).
// With one report, the old one is the baseline the regression gate names.
// Exit codes: 0 no regression, 1 a regression beyond the gate's tolerances, 2 bad input.
#include "common/args.h"
#include "common/gate_lookup.h"
#include "common/golden_args.h"
#include "golden/commands.h"
#include "shardgate/report_diff.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace sg::golden_cli {
namespace {

// The tolerances used when --gate is not given: gates/regression.json found above the new
// report (find_gate_file), never in the current directory.
constexpr const char* kDefaultRegressionGate = "regression.json";

struct DiffOptions {
  std::vector<std::string> reports_given;  // [OLD.json] NEW.json
  std::string gate;
  bool all = false;
  cli::ReportArgs reports;
  cli::LogArgs log;
};

int run_diff(const DiffOptions& o) {
  if (Status s = o.log.validate(); !s.is_ok()) return cli::report_error(s);
  const std::string new_report = o.reports_given.back();
  std::string gate = o.gate;
  if (gate.empty()) {
    auto found = cli::find_gate_file({new_report}, kDefaultRegressionGate);
    if (!found) return cli::report_error(found.status());
    gate = *found;
  }
  if (gate.empty()) {
    return cli::report_error(make_error(
        ErrorCode::kUsage, "diff: no tolerances: give --gate FILE (no gates/{} above {})",
        kDefaultRegressionGate, new_report));
  }
  auto policy = load_regression_policy(gate);
  if (!policy) return cli::report_error(policy.status());
  std::string old_report = o.reports_given.size() == 2 ? o.reports_given.front() : policy->baseline;
  if (old_report.empty()) {
    return cli::report_error(make_error(
        ErrorCode::kUsage,
        "diff {}: no old report: give OLD.json NEW.json, or name the accepted report in {} "
        "(\"baseline\": {{\"report\": PATH, \"reason\": ...}})",
        new_report, policy->path));
  }
  if (o.reports_given.size() == 1 && o.log.level() >= 0) {
    std::cout << fmt::format("baseline {} (from {}: {})\n", old_report, policy->path,
                             policy->baseline_reason);
  }
  auto diff = diff_reports(old_report, new_report, *policy);
  if (!diff) return cli::report_error(diff.status());
  const DiffReport report{*diff, *policy, cli::command_line(), cli::kGoldenValidatorVersion};
  if (Status s = o.reports.write(report); !s.is_ok()) {
    return cli::report_error(s);
  }
  if (o.log.level() >= 0) {
    std::cout << report_diff_table(*diff, o.all || o.log.level() > 0);
    std::cout << fmt::format("tolerances from {}\n", policy->path);
  } else {
    std::cout << fmt::format("diff: {} regression(s)\n", diff->regressions());
  }
  return diff->regressions() > 0 ? kExitGateFailed : kExitPass;
}

}  // namespace

void add_diff_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* sub = app.add_subcommand(
      "diff", "What got worse between two JSON reports of one tool (golden-validator or "
              "ane-validator), even when both pass; exit 1 on a regression beyond the tolerances");
  sub->add_option("reports", o->reports_given,
                  "The earlier and the later JSON report; with only the later one, the earlier is "
                  "the baseline the regression gate names")
      ->option_text("[OLD.json] NEW.json")
      ->expected(1, 2)
      ->required();
  sub->add_option("--gate", o->gate, "Regression tolerances (default: gates/regression.json found from NEW.json's directory upward to the repository root)")
      ->option_text("FILE");
  sub->add_flag("--all", o->all, "List what got better too");
  o->reports.add_to(*sub, {ReportFormat::kHtml});
  o->log.add_to(*sub);
  sub->callback([&result, o] { result.run = [o] { return run_diff(*o); }; });
}

}  // namespace sg::golden_cli
