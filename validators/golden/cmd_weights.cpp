// golden-validator weights: static diagnostics of every compressed weight of the given shards
// (weight_diagnostics.h), optionally against their FP16 baselines. Executes nothing.
// Exit codes: 0 no weight flagged, 1 a weight flagged or no compressed weight at all (nothing
// was checked, so nothing passed), 2 bad input or usage, 3 internal error.
#include "common/args.h"
#include "common/golden_args.h"
#include "golden/commands.h"
#include "shardgate/shard.h"
#include "shardgate/weight_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace sg::golden_cli {
namespace {

struct WeightsOptions {
  std::vector<std::string> shards;
  cli::BaselineArgs baseline;
  cli::ReportArgs reports;
  cli::LogArgs log;
  bool all = false;
};

// A baseline that pairs none of a shard's compressed weights (another model, another layer)
// measured nothing: every rel.err is "-", no baseline_error flag can fire, and palette forms
// (which have no outlier_scale) read CLEAN, exit 0, on no evidence. A wrong baseline is bad input.
Status check_baseline_pairs(const WeightDiagnosticsResult& r) {
  if (r.baseline.empty() || r.weights.empty()) return Status::ok();
  for (const WeightDiagnostic& w : r.weights) {
    if (w.has_baseline) return Status::ok();
  }
  const WeightDiagnostic& first = r.weights.front();
  return make_error(ErrorCode::kUsage,
                    "{}: the baseline {} pairs with none of its {} compressed weight(s) (weight "
                    "'{}', use {}: {}): not the FP16 build of this shard?",
                    r.shard, r.baseline, r.weights.size(), first.name, first.key, first.baseline_name);
}

int run_weights(const WeightsOptions& o) {
  if (Status s = o.log.validate(); !s.is_ok()) return cli::report_error(s);
  auto paths = cli::expand_shard_paths(o.shards);
  if (!paths) return cli::report_error(paths.status());
  if (Status s = o.baseline.validate(paths->size(), /*required=*/false); !s.is_ok()) {
    return cli::report_error(s);
  }
  WeightReport report;
  report.tool_version = cli::kGoldenValidatorVersion;
  report.command_line = cli::command_line();
  for (const std::string& path : *paths) {
    auto shard = Shard::open(path);
    if (!shard) return cli::report_error(shard.status());
    std::shared_ptr<Shard> baseline;
    auto base_path = o.baseline.baseline_of(path);
    if (!base_path) return cli::report_error(base_path.status());
    if (!base_path->empty()) {
      auto opened = Shard::open(*base_path);
      if (!opened) return cli::report_error(opened.status());
      baseline = *opened;
    }
    auto result = diagnose_weights(**shard, baseline.get());
    if (!result) return cli::report_error(result.status());
    if (Status s = check_baseline_pairs(*result); !s.is_ok()) return cli::report_error(s);
    report.shards.push_back(std::move(*result));
  }
  if (Status s = o.reports.write(report); !s.is_ok()) {
    return cli::report_error(s);
  }
  if (o.log.level() >= 0) {
    std::cout << weight_report_table(report, o.all || o.log.level() > 0);
  } else if (report.weights() == 0) {
    std::cout << fmt::format("weights: {} shard(s), no compressed weight: nothing to diagnose (an "
                             "unquantized build?) -> {}\n",
                             report.shards.size(), report.verdict());
  } else {
    std::cout << fmt::format("weights: {} shard(s), {} weight(s) flagged -> {}\n",
                             report.shards.size(), report.flagged(), report.verdict());
  }
  return report.exit_code();
}

}  // namespace

void add_weights_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<WeightsOptions>();
  CLI::App* sub = app.add_subcommand(
      "weights",
      "Diagnose every compressed weight (bits used, outliers, scale steps, error against the FP16 "
      "baseline) without running anything");
  sub->add_option("shards", options->shards, "Shards: paths, globs or directories of shards")
      ->option_text("SHARD...")
      ->required();
  options->baseline.add_to(*sub);
  sub->add_flag("--all", options->all, "List every weight, not only the flagged ones");
  options->reports.add_to(*sub, {ReportFormat::kHtml});
  options->log.add_to(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_weights(*options); }; });
}

}  // namespace sg::golden_cli
