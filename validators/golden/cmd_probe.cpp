// golden-validator probe: quantized shards against their FP16 baselines on N seeded random
// unit-norm inputs (the "5 seeds on p0of8" check): one check per output, one row per seed, gated
// through the shared policy and reports. Seeds where both shards output all zeros (an MoE pack
// that got no token) are degenerate rows: reported, not gated.
#include "common/golden_args.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "shardgate/golden_report.h"
#include "shardgate/io.h"
#include "shardgate/probe.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

namespace sg::golden_cli {
namespace {

struct ProbeCommandOptions {
  std::vector<std::string> candidates;
  std::string baseline;
  std::string baseline_replace;
  std::string function = "main";
  int64_t seeds = 5;
  uint64_t seed = 0;
  std::vector<std::string> inputs;
  ExecArgs exec;
  cli::SelectionArgs selection;
  cli::GoldenCommonArgs common;
};

// --baseline-replace OLD=NEW: the baseline path is the candidate path with the last OLD
// replaced by NEW (e.g. _lut4=_fp16).
Result<std::string> baseline_for(const ProbeCommandOptions& o, const std::string& candidate) {
  if (!o.baseline.empty()) return o.baseline;
  const size_t eq = o.baseline_replace.find('=');
  SG_CHECK(eq != std::string::npos && eq > 0, ErrorCode::kUsage,
           "--baseline-replace {}: expected OLD=NEW", o.baseline_replace);
  const std::string from = o.baseline_replace.substr(0, eq);
  const std::string to = o.baseline_replace.substr(eq + 1);
  // `candidate` comes from expand_shard_paths: no trailing '/'.
  const size_t at = candidate.rfind(from);
  SG_CHECK(at != std::string::npos, ErrorCode::kUsage,
           "--baseline-replace {}: '{}' does not occur in candidate {}", o.baseline_replace, from,
           candidate);
  return candidate.substr(0, at) + to + candidate.substr(at + from.size());
}

int run_probe(const ProbeCommandOptions& o) {
  if (Status s = o.common.log.validate(); !s.is_ok()) return cli::report_error(s);
  if (Status s = o.selection.validate(); !s.is_ok()) return cli::report_error(s);
  if (o.baseline.empty() == o.baseline_replace.empty()) {
    return cli::report_error(make_error(
        ErrorCode::kUsage, "probe: give exactly one of --baseline SHARD and --baseline-replace OLD=NEW"));
  }
  auto policy = cli::build_gate_policy(o.common);
  if (!policy) return cli::report_error(policy.status());
  auto expanded = cli::expand_shard_paths(o.candidates);
  if (!expanded) return cli::report_error(expanded.status());
  const std::vector<std::string> candidates = o.selection.select(*expanded);
  if (candidates.empty()) {
    return cli::report_error(make_error(ErrorCode::kUsage,
                                        "probe: slice {} of {} selects none of the {} shards",
                                        o.selection.shard_index, o.selection.shard_count,
                                        expanded->size()));
  }
  if (!o.baseline.empty() && candidates.size() > 1) {
    return cli::report_error(make_error(
        ErrorCode::kUsage,
        "probe: --baseline names one shard but {} candidates were given; use --baseline-replace",
        candidates.size()));
  }
  auto given = read_named_inputs(o.inputs);
  if (!given) return cli::report_error(given.status());

  FidelityRun run;
  run.command = "probe";
  ProbeOptions po;
  po.function = o.function;
  po.seeds = o.seeds;
  po.first_seed = o.seed;
  po.given_inputs = *given;
  po.precision = o.exec.precision_value();
  po.threads = o.exec.threads;
  po.metrics = o.common.metrics.options(*policy);
  run.options = po.metrics;
  for (const std::string& candidate : candidates) {
    auto baseline = baseline_for(o, candidate);
    if (!baseline) return cli::report_error(baseline.status());
    po.labels.clear();
    if (candidates.size() > 1) {
      po.labels.emplace_back("shard", std::filesystem::path(candidate).stem().string());
    }
    auto result = probe_shard(candidate, *baseline, po);
    if (!result) return cli::report_error(result.status());
    run.inputs.push_back({"candidate", candidate, result->candidate_sha256});
    run.inputs.push_back({"baseline", *baseline, result->baseline_sha256});
    for (CheckResult& c : result->checks) run.checks.push_back(std::move(c));
    run.notes.insert(run.notes.end(), result->notes.begin(), result->notes.end());
    for (const auto& [which, nf] : result->first_nonfinite) {
      run.notes.push_back(fmt::format("{}: {} shard: first non-finite value: {}", candidate,
                                      which, describe_nonfinite(nf)));
    }
  }
  run.notes.push_back(fmt::format("precision {}, function '{}', seeds {}..{}",
                                  precision_name(po.precision), o.function, o.seed,
                                  o.seed + static_cast<uint64_t>(o.seeds) - 1));
  print_notes(run.notes, o.common.log.level());
  return cli::finish_golden_report(std::move(run), std::move(*policy), o.common);
}

}  // namespace

void add_probe_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ProbeCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "probe", "A quantized shard against its FP16 baseline on N seeded random unit-norm inputs");
  sub->add_option("candidates", options->candidates,
                  "Quantized shard(s): paths, globs or directories of shards")
      ->option_text("SHARD...")
      ->required();
  sub->add_option("--baseline", options->baseline, "The FP16 baseline shard (one candidate)")
      ->option_text("SHARD");
  sub->add_option("--baseline-replace", options->baseline_replace,
                  "Baseline of each candidate: its path with the last OLD replaced by NEW, e.g. "
                  "_lut4=_fp16")
      ->option_text("OLD=NEW");
  sub->add_option("--function", options->function, "Function to probe")->default_val("main");
  sub->add_option("--seeds", options->seeds, "Number of seeds")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}))
      ->default_val(5);
  sub->add_option("--seed", options->seed, "First seed (seeds SEED .. SEED+N-1)")->default_val(0);
  sub->add_option("--input", options->inputs,
                  "An input from a .npy file, the same for every seed (repeatable)")
      ->option_text("NAME=FILE.npy");
  options->exec.add_to(*sub);
  options->selection.add_to(*sub);
  options->common.add_to(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_probe(*options); }; });
}

}  // namespace sg::golden_cli
