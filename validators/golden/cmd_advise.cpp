// golden-validator advise: which compressed weights of a failing chain to keep at fp16 so that
// it passes its gate (advise.h). Runs the chain as `run` does; when it fails, ranks the
// weights by the culprit search and the weight diagnostics, then greedily re-runs it with
// weights replaced in memory by the baseline's fp16 values until it passes, and prunes.
// Exit codes: 0 a passing set was found (or the chain passes already), 1 none within
// --max-runs, 2 bad input or usage, 3 internal error.
#include "common/golden_args.h"
#include "golden/advise_runner.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "golden/run_culprits.h"
#include "shardgate/advice_report.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>

namespace sg::golden_cli {
namespace {

struct AdviseOptions {
  std::string chain;
  std::string goldens;
  bool teacher_forced = false;
  bool both = false;
  cli::BaselineArgs baseline;
  int64_t max_runs = 200;
  bool all = false;
  ExecArgs exec;
  cli::GoldenInputArgs input;
  cli::GoldenCommonArgs common;
};

// The summary message of a report, as `run` ends its output.
std::string summary_of(const GoldenReport& r) {
  return fmt::format("{}: {}", report_verdict_name(r), r.evaluation.summary.message);
}

int run_advise(const AdviseOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = o.common.log.validate(); !s.is_ok()) return cli::report_error(s);
  if (Status s = o.exec.validate(o.both ? "advise --both already gates two views" : ""); !s.is_ok()) {
    return cli::report_error(s);
  }
  if (o.max_runs < 1) {
    return cli::report_error(make_error(ErrorCode::kUsage, "--max-runs {}: at least 1 run is needed", o.max_runs));
  }
  if (!o.baseline.baseline.empty() || o.baseline.replace.empty()) {
    return cli::report_error(make_error(ErrorCode::kUsage,
                                        "advise needs --baseline-replace OLD=NEW: every shard of the "
                                        "chain is compared with its own FP16 baseline"));
  }
  if (Status s = o.baseline.validate(2, true); !s.is_ok()) return cli::report_error(s);
  auto policy = cli::build_gate_policy(o.common, {o.chain});
  if (!policy) return cli::report_error(policy.status());
  auto chain = load_chain_manifest(o.chain);
  if (!chain) return cli::report_error(chain.status());
  const std::string golden_path = o.goldens.empty() ? chain->goldens : o.goldens;
  if (golden_path.empty()) {
    return cli::report_error(make_error(ErrorCode::kUsage, "{}: the chain names no golden dump; give --goldens DIR", o.chain));
  }
  auto open_options = o.input.options();
  if (!open_options) return cli::report_error(open_options.status());
  auto goldens = open_golden_source(golden_path, *open_options);
  if (!goldens) return cli::report_error(goldens.status());
  auto chain_sha = sha256_file(o.chain);
  if (!chain_sha) return cli::report_error(chain_sha.status());

  ChainFidelityOptions fo;
  if (o.both) {
    fo.modes = {ChainMode::kFreeRunning, ChainMode::kTeacherForced};
  } else if (o.teacher_forced) {
    fo.modes = {ChainMode::kTeacherForced};
  }
  fo.precision = o.exec.precision_value();
  fo.threads = o.exec.threads;
  fo.metrics = o.common.metrics.options(*policy);
  AdviceRunner runner(*chain, **goldens, *policy, o.common.gate.strict, fo, o.exec.both_subnormal_views());

  AdviceResult result;
  result.tool_version = cli::kGoldenValidatorVersion;
  result.command_line = cli::command_line();
  result.chain = o.chain;
  result.chain_sha256 = *chain_sha;
  result.views = o.both ? "free-running and teacher-forced" : o.teacher_forced ? "teacher-forced" : "free-running";
  if (o.exec.both_subnormal_views()) result.views += ", subnormals keep and flush";
  result.baseline_replace = o.baseline.replace;
  result.max_runs = o.max_runs;

  auto before = runner.run(nullptr, {});
  if (!before) return cli::report_error(before.status());
  result.verdict_before = summary_of(*before);
  result.provenance = golden_report_envelope(*before).provenance;
  result.search.runs = 1;
  std::optional<GoldenReport> after;
  if (before->evaluation.summary.verdict == Verdict::kPass) {
    result.already_passes = true;
    result.search.stopped = "the chain passes as it is: no search";
  } else if (before->evaluation.summary.verdict == Verdict::kNoEvidence) {
    // A gate that judges nothing (every check excluded or without a threshold) cannot pass
    // whatever weights are kept at fp16: searching re-ran the chain once per candidate and
    // ended "the gate still fails: no set of these weights is enough", a claim about weights
    // the runs never tested. Exit 1, as no evidence is.
    result.no_evidence = true;
    result.search.stopped = fmt::format("the gate judges nothing as built ({}): no set of weights can "
                                        "make it pass, so no search",
                                        before->evaluation.summary.message);
  } else {
    // Ranking evidence: the culprit search on every step up to the first failing check.
    if (Status s = add_run_culprits(*before, *chain, **goldens, o.baseline, fo.precision, fo.threads); !s.is_ok()) {
      // A step the culprit search cannot run (a stateful shard) leaves the weight diagnostics
      // to rank; anything else is the command's error.
      if (s.code() != ErrorCode::kUnsupported) return cli::report_error(s);
      before->culprits.reset();
      before->culprits_note = fmt::format("no culprit search ({}): ranked by the weight diagnostics only",
                                          s.message());
    }
    result.culprits_note = before->culprits_note;
    std::vector<AdviceShard> shards;
    for (const ChainStep& step : chain->steps) {
      if (step.is_combine) continue;
      auto base_path = o.baseline.step_baseline_of(step.shard);
      if (!base_path) return cli::report_error(base_path.status());
      auto cand = Shard::open(step.shard);
      if (!cand) return cli::report_error(cand.status());
      auto base = Shard::open(*base_path);
      if (!base) return cli::report_error(base.status());
      runner.keep_open(*base);
      shards.push_back({step.id, *cand, *base, step.function});
    }
    auto candidates = advice_candidates(shards, before->culprits ? &before->culprits->shards : nullptr, result.notes);
    if (!candidates) return cli::report_error(candidates.status());
    result.candidates = std::move(*candidates);
    const std::vector<AdviceCandidate>& ranked = result.candidates;
    const AdviceEvaluator evaluate = [&](const std::vector<size_t>& set) -> Result<AdviceVerdict> {
      SG_ASSIGN_OR_RETURN(GoldenReport r, runner.run(&ranked, set));
      AdviceVerdict v;
      v.passes = r.evaluation.summary.verdict == Verdict::kPass;
      v.summary = summary_of(r);
      if (v.passes) after = std::move(r);  // the answer is always the last passing set
      return v;
    };
    auto search = search_advice(ranked.size(), o.max_runs, 1, evaluate);
    if (!search) return cli::report_error(search.status());
    result.search = std::move(*search);
    if (after && result.search.found) result.verdict_after = summary_of(*after);
  }
  const bool answered = after && result.search.found;
  result.checks = advice_checks(before->run, before->evaluation, answered ? &after->run : nullptr,
                                answered ? &after->evaluation : nullptr);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (Status s = o.common.reports.write(result); !s.is_ok()) {
    return cli::report_error(s);
  }
  const std::string table = advice_report_table(result, o.all || o.common.log.level() > 0);
  if (o.common.log.level() >= 0) {
    std::cout << table;
  } else {
    // -q: the verdict line only (the table's last two lines).
    const size_t last = table.rfind("advise: ");
    std::cout << (last == std::string::npos ? table : table.substr(last));
  }
  return result.exit_code();
}

}  // namespace

void add_advise_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<AdviseOptions>();
  CLI::App* sub = app.add_subcommand(
      "advise",
      "Precision advice for a failing chain: the smallest set found of compressed weights to keep "
      "at fp16 (from the FP16 baselines) so the chain passes its gate; the tool recommends, the "
      "user re-converts");
  sub->add_option("chain", o->chain, "Chain manifest of the quantized build (JSON, shardgate/chain@1)")
      ->option_text("CHAIN.json")
      ->required();
  sub->add_option("--goldens", o->goldens, "Golden dump instead of the one the chain names")
      ->option_text("DIR|FILE");
  auto* tf = sub->add_flag("--teacher-forced", o->teacher_forced, "Gate the teacher-forced view (as run)");
  sub->add_flag("--both", o->both, "Gate both views (as run --both)")->excludes(tf);
  o->baseline.add_to(*sub);
  sub->add_option("--max-runs", o->max_runs, "At most this many chain runs (the search stops there)")
      ->capture_default_str();
  sub->add_flag("--all", o->all, "List every run of the search");
  o->exec.add_to(*sub);
  o->input.add_to(*sub);
  o->common.add_to(*sub, {ReportFormat::kHtml});  // advice has no HTML form
  sub->callback([&result, o] { result.run = [o] { return run_advise(*o); }; });
}

}  // namespace sg::golden_cli
