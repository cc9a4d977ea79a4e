// golden-validator run: a chain of shards end to end against golden dumps (per layer, per
// position, first failing layer and position, trend), teacher-forced on request, or both views
// in one report. A teacher-forced run can be one slice of a CI fan-out (--shard-index/-count;
// the slices' reports are combined by `merge`).
#include "common/golden_args.h"
#include "common/progress.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "golden/run_culprits.h"
#include "golden/step_progress.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace sg::golden_cli {
namespace {

struct RunCommandOptions {
  std::string chain;
  std::string goldens;
  bool teacher_forced = false;
  bool both = false;
  cli::SelectionArgs selection;  // --shard-index/--shard-count: teacher-forced only
  bool culprits = false;         // --culprits: search the first failing step group's ops
  cli::BaselineArgs baseline;    // the FP16 baselines --culprits compares with
  ExecArgs exec;
  bool no_prefetch = false;  // --no-prefetch (ChainRunOptions::prefetch)
  cli::GoldenInputArgs input;
  cli::GoldenCommonArgs common;
};

int run_run(const RunCommandOptions& o) {
  if (Status s = o.common.log.validate(); !s.is_ok()) return cli::report_error(s, "run", o.common);
  if (Status s = o.exec.validate(o.both ? "run --both already reports two views" : "");
      !s.is_ok()) {
    return cli::report_error(s, "run", o.common);
  }
  if (Status s = o.selection.validate(); !s.is_ok()) return cli::report_error(s, "run", o.common);
  if (o.culprits && o.baseline.replace.empty()) {
    return cli::report_error(
        make_error(ErrorCode::kUsage, "--culprits needs --baseline-replace OLD=NEW: the search "
                                      "compares each shard of the failing step group with its "
                                      "FP16 baseline"),
        "run", o.common);
  }
  if (!o.culprits && (!o.baseline.replace.empty() || !o.baseline.baseline.empty())) {
    return cli::report_error(
        make_error(ErrorCode::kUsage, "--baseline/--baseline-replace are used by --culprits only"),
        "run", o.common);
  }
  if (Status s = o.baseline.validate(2, o.culprits); !s.is_ok()) return cli::report_error(s, "run", o.common);
  if (o.selection.shard_count > 1 && !o.teacher_forced) {
    return cli::report_error(
        make_error(ErrorCode::kUsage,
                   "--shard-count {}: only run --teacher-forced can be split across jobs; "
                   "free-running steps are sequential (each reads what the steps before it "
                   "produced), so {} cannot be sliced",
                   o.selection.shard_count, o.both ? "--both" : "a free-running run"),
        "run", o.common);
  }
  auto policy = cli::build_gate_policy(o.common, {o.chain});
  if (!policy) return cli::report_error(policy.status(), "run", o.common);
  auto chain = load_chain_manifest(o.chain);
  if (!chain) return cli::report_error(chain.status(), "run", o.common);
  const std::string golden_path = o.goldens.empty() ? chain->goldens : o.goldens;
  if (golden_path.empty()) {
    return cli::report_error(
        make_error(ErrorCode::kUsage, "{}: the chain names no golden dump; give --goldens DIR", o.chain),
        "run", o.common);
  }
  auto open_options = o.input.options();
  if (!open_options) return cli::report_error(open_options.status(), "run", o.common);
  auto goldens = open_golden_source(golden_path, *open_options);
  if (!goldens) return cli::report_error(goldens.status(), "run", o.common);

  ChainFidelityOptions fo;
  if (o.both) {
    fo.modes = {ChainMode::kFreeRunning, ChainMode::kTeacherForced};
  } else if (o.teacher_forced) {
    fo.modes = {ChainMode::kTeacherForced};
  }
  fo.slice_index = o.selection.shard_index;
  fo.slice_count = o.selection.shard_count;
  fo.precision = o.exec.precision_value();
  fo.threads = o.exec.threads;
  fo.prefetch = !o.no_prefetch;
  fo.metrics = o.common.metrics.options(*policy);
  const int level = o.common.log.level();
  // Every step this job runs in every view: the modes (a CI slice: its groups' steps only), and
  // the run again with subnormals flushed.
  int64_t steps = static_cast<int64_t>(chain->steps.size());
  if (fo.slice_count > 1) {
    auto groups = teacher_forced_groups(*chain, **goldens);
    if (!groups) return cli::report_error(groups.status(), "run", o.common);
    steps = 0;
    for (const SliceGroup& g : *groups) {
      if (slice_runs_group(g, fo.slice_index, fo.slice_count)) steps += static_cast<int64_t>(g.steps.size());
    }
  }
  const int64_t total = steps * static_cast<int64_t>(fo.modes.size()) *
                        (o.exec.both_subnormal_views() ? 2 : 1);
  cli::Progress progress(std::cerr, total, level, cli::stderr_is_terminal());
  fo.on_step = [&](ChainMode mode, const ChainStepRecord& r) {
    progress.done(fmt::format("[{}] {}", chain_mode_name(mode), step_label(*chain, r)), step_detail(r));
  };
  auto run = run_chain_fidelity(*chain, **goldens, fo);
  if (!run) progress.finish();  // the error goes on a clean line
  if (!run) return cli::report_error(run.status(), "run", o.common);
  if (o.exec.both_subnormal_views()) {
    // The same chain again with subnormal results flushed; both views are gated.
    fo.precision = Precision::kFp16Ftz;
    auto flushed = run_chain_fidelity(*chain, **goldens, fo);
    if (!flushed) progress.finish();
    if (!flushed) return cli::report_error(flushed.status(), "run", o.common);
    run = join_subnormal_views(std::move(*run), std::move(*flushed));
  }
  progress.finish();
  print_notes(run->notes, level);
  std::function<Status(GoldenReport&)> amend;
  if (o.culprits) {
    amend = [&](GoldenReport& report) {
      return add_run_culprits(report, *chain, **goldens, o.baseline, o.exec.precision_value(),
                              o.exec.threads);
    };
  }
  return cli::finish_golden_report(std::move(*run), std::move(*policy), o.common, amend);
}

}  // namespace

void add_run_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<RunCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a chain of shards end to end and compare its checkpoints with golden dumps");
  sub->add_option("chain", options->chain, "Chain manifest (JSON, schema shardgate/chain@1)")
      ->option_text("CHAIN.json")
      ->required();
  sub->add_option("--goldens", options->goldens,
                  "Golden dump (directory or .safetensors) instead of the one the chain names")
      ->option_text("DIR|FILE");
  auto* tf = sub->add_flag("--teacher-forced", options->teacher_forced,
                           "Feed every layer the golden of the layer before (a layer's own error, "
                           "without upstream drift)");
  sub->add_flag("--both", options->both,
                "Free-running and teacher-forced views in one report")
      ->excludes(tf);
  options->selection.add_to(*sub, "teacher-forced step groups (--teacher-forced only)");
  sub->add_flag("--culprits", options->culprits,
                "When a check fails: find the ops where the error enters, in the shard steps "
                "that make the first failing checkpoint, each against its FP16 baseline "
                "(--baseline-replace); in the table and the reports");
  options->baseline.add_to(*sub);
  options->exec.add_to(*sub);
  sub->add_flag("--no-prefetch", options->no_prefetch,
                "Do not open the next shard (parse, fingerprint, fault in its weights) on a helper thread while a step runs, nor release the finished one there (the results are the same; also SG_PREFETCH=0)");
  options->input.add_to(*sub);
  options->common.add_to(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_run(*options); }; });
}

}  // namespace sg::golden_cli
