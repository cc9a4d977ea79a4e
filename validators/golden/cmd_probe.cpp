// golden-validator probe: quantized shards against their FP16 baselines on N seeds (the "5 seeds
// on p0of8" check): realistic inputs from a chain's goldens (--inputs-from) plus seeded
// perturbations, or seeded random inputs of a stated scale. One check per output, one row per
// seed, gated through the shared policy and reports. Seeds where both shards output all zeros
// (an MoE pack that got no token) are degenerate rows, seeds where the baseline itself moves
// more than the gate allows under a tiny perturbation are unstable rows: both reported, neither
// gated (probe.h).
#include "common/golden_args.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "golden/exec_calls.h"
#include "golden/probe_calls.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"
#include "shardgate/io.h"
#include "shardgate/probe.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

namespace sg::golden_cli {
namespace {

// A probe of a shard against itself passes every seed trivially; the report says so rather
// than let it read as evidence. (Same files only: the programs' hashes alone would also match
// two builds that differ in their weights.)
void note_self_probe(const std::string& candidate, const std::string& baseline,
                     std::vector<std::string>& notes) {
  std::error_code ec;
  if (!std::filesystem::equivalent(candidate, baseline, ec)) return;
  notes.insert(notes.begin(), fmt::format("{} is its own baseline (the same files): every check "
                                          "compares the shard with itself", candidate));
}

struct ProbeCommandOptions {
  std::vector<std::string> candidates;
  cli::BaselineArgs baseline;
  std::string function = "main";
  int64_t seeds = 5;
  uint64_t seed = 0;
  std::vector<std::string> inputs;
  bool cast = false;
  std::string inputs_from;
  std::vector<std::string> golden_inputs;  // NAME=TENSOR with a golden dump
  double perturbation = 0.05;
  std::optional<double> input_rms;
  double input_scale = 1.0;
  double stability_rms = 1e-2;
  std::vector<std::string> output_kinds;
  std::vector<std::string> position_axes;  // NAME=N|none
  SequenceArgs sequence;  // sequence mode (probe_calls.h)
  ExecArgs exec;
  cli::SelectionArgs selection;
  cli::GoldenCommonArgs common;
};

// Each candidate's name in the checks: the path tail no other candidate shares
// (distinct_path_tails), so layers/00/model.mlpackage and layers/01/model.mlpackage give
// checks of shards "00/model.mlpackage" and "01/model.mlpackage" instead of one name twice.
// label: the same without the last component's extension (the "shard" label, "01/model").
struct CandidateName {
  std::string id;
  std::string label;
};
std::map<std::string, CandidateName> candidate_names(const std::vector<std::string>& candidates) {
  const std::vector<std::string> tails = distinct_path_tails(candidates);
  std::map<std::string, CandidateName> out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    out[candidates[i]] = {tails[i], std::filesystem::path(tails[i]).replace_extension().generic_string()};
  }
  return out;
}

// Sequence mode (--calls / --chunk, --carry): probe_calls per candidate, under one or both
// subnormal views.
int probe_sequence(const ProbeCommandOptions& o, const std::vector<std::string>& candidates,
                   const std::map<std::string, GivenInput>& files,
                   const std::map<std::string, std::string>& kinds,
                   const std::map<std::string, std::optional<int64_t>>& axes, GatePolicy policy) {
  if (!o.sequence.active()) {
    return cli::report_error(make_error(ErrorCode::kUsage, "--carry needs --calls or --chunk"));
  }
  if (!o.inputs_from.empty() || !o.golden_inputs.empty()) {
    return cli::report_error(make_error(
        ErrorCode::kUsage, "probe --calls/--chunk: the calls' inputs come from the sequence; "
                           "--inputs-from and --golden-input do not apply"));
  }
  FidelityRun run;
  run.command = "probe";
  ProbeCallsOptions pc;
  pc.function = o.function;
  pc.threads = o.exec.threads;
  pc.cast = o.cast;
  pc.seed = o.seed;
  pc.metrics = o.common.metrics.options(policy);
  pc.output_kinds = kinds;
  pc.position_axes = axes;
  run.options = pc.metrics;
  const bool both = o.exec.both_subnormal_views();
  const std::vector<Precision> precisions =
      both ? std::vector<Precision>{Precision::kFp16, Precision::kFp16Ftz}
           : std::vector<Precision>{o.exec.precision_value()};
  const auto names = candidate_names(candidates);
  for (const std::string& candidate : candidates) {
    auto baseline = o.baseline.baseline_of(candidate);
    if (!baseline) return cli::report_error(baseline.status());
    for (size_t view = 0; view < precisions.size(); ++view) {
      pc.precision = precisions[view];
      pc.labels.clear();
      if (candidates.size() > 1) pc.labels.emplace_back("shard", names.at(candidate).label);
      if (both) pc.labels.push_back(subnormal_label(pc.precision));
      auto result = probe_calls(candidate, *baseline, o.sequence, files, pc);
      if (!result) return cli::report_error(result.status());
      for (CheckResult& c : result->checks) run.checks.push_back(std::move(c));
      const std::string prefix = view > 0 ? "[subnormals flush] " : "";
      for (const std::string& n : result->notes) run.notes.push_back(prefix + n);
      if (view > 0) continue;
      note_self_probe(candidate, *baseline, run.notes);
      for (ReportInput& in : result->inputs) run.inputs.push_back(std::move(in));
      for (ReportShard& sh : result->shards) run.shards.push_back(std::move(sh));
    }
  }
  run.notes.push_back(fmt::format("precision {}, function '{}'",
                                  both ? "fp16 and fp16-ftz" : precision_name(o.exec.precision_value()),
                                  o.function));
  print_notes(run.notes, o.common.log.level());
  return cli::finish_golden_report(std::move(run), std::move(policy), o.common);
}

int run_probe(const ProbeCommandOptions& o) {
  if (Status s = o.common.log.validate(); !s.is_ok()) return cli::report_error(s);
  if (Status s = o.selection.validate(); !s.is_ok()) return cli::report_error(s);
  if (Status s = o.exec.validate(); !s.is_ok()) {
    return cli::report_error(s);
  }
  auto expanded = cli::expand_shard_paths(o.candidates);
  if (!expanded) return cli::report_error(expanded.status());
  auto policy = cli::build_gate_policy(o.common, *expanded);
  if (!policy) return cli::report_error(policy.status());
  const std::vector<std::string> candidates = o.selection.select(*expanded);
  if (candidates.empty()) {
    return cli::report_error(make_error(ErrorCode::kUsage,
                                        "probe: slice {} of {} selects none of the {} shards",
                                        o.selection.shard_index, o.selection.shard_count,
                                        expanded->size()));
  }
  if (Status s = o.baseline.validate(candidates.size(), /*required=*/true); !s.is_ok()) {
    return cli::report_error(s);
  }
  auto files = read_named_inputs(o.inputs);
  if (!files) return cli::report_error(files.status());
  std::map<std::string, std::string> kinds;
  for (const std::string& k : o.output_kinds) {
    const size_t eq = k.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == k.size()) {
      return cli::report_error(make_error(ErrorCode::kUsage, "--output-kind {}: expected NAME=KIND", k));
    }
    kinds[k.substr(0, eq)] = k.substr(eq + 1);
  }
  auto parsed_axes = parse_output_position_axes(o.position_axes);
  if (!parsed_axes) return cli::report_error(parsed_axes.status());
  const std::map<std::string, std::optional<int64_t>>& axes = *parsed_axes;
  if (o.sequence.active() || !o.sequence.carry.empty()) return probe_sequence(o, candidates, *files, kinds, axes, *policy);
  // --inputs-from: a chain manifest (.json), or a golden dump with --golden-input NAME=TENSOR.
  std::optional<ChainManifest> chain;
  std::unique_ptr<GoldenSource> goldens;
  if (!o.inputs_from.empty()) {
    const bool is_chain = std::filesystem::path(o.inputs_from).extension() == ".json";
    if (is_chain) {
      auto c = load_chain_manifest(o.inputs_from);
      if (!c) return cli::report_error(c.status());
      if (c->goldens.empty()) {
        return cli::report_error(make_error(ErrorCode::kUsage,
                                            "--inputs-from {}: the chain names no golden dump", o.inputs_from));
      }
      auto g = open_golden_source(c->goldens);
      if (!g) return cli::report_error(g.status());
      goldens = std::move(*g);
      chain = std::move(*c);
    } else {
      auto g = open_golden_source(o.inputs_from);
      if (!g) return cli::report_error(g.status());
      goldens = std::move(*g);
      if (o.golden_inputs.empty()) {
        return cli::report_error(make_error(
            ErrorCode::kUsage, "--inputs-from {}: a golden dump needs --golden-input NAME=TENSOR "
                               "for each float input (or give the chain manifest)", o.inputs_from));
      }
    }
  } else if (!o.golden_inputs.empty()) {
    return cli::report_error(make_error(ErrorCode::kUsage, "--golden-input needs --inputs-from GOLDENS"));
  }

  FidelityRun run;
  run.command = "probe";
  ProbeOptions po;
  po.function = o.function;
  po.seeds = o.seeds;
  po.first_seed = o.seed;
  po.precision = o.exec.precision_value();
  po.threads = o.exec.threads;
  po.metrics = o.common.metrics.options(*policy);
  po.perturbation = o.perturbation;
  po.input_scale.rms = o.input_rms;
  po.input_scale.scale = o.input_scale;
  po.stability_rms = o.stability_rms;
  run.options = po.metrics;
  if (chain) run.inputs.push_back({"chain", o.inputs_from, ""});
  if (goldens) {
    auto sha = sha256_file(goldens->identity_file());
    run.inputs.push_back({"goldens", goldens->path(), sha ? *sha : std::string()});
  }
  const std::function<Result<std::string>(const std::string&)> baseline_of =
      [&o](const std::string& shard) { return o.baseline.step_baseline_of(shard); };
  std::vector<ReportShard> executed;
  // FP16 baseline steps run to make --inputs-from inputs, kept for the next candidate.
  ChainProbeCache chain_cache;
  const auto names = candidate_names(candidates);
  for (const std::string& candidate : candidates) {
    auto baseline = o.baseline.baseline_of(candidate);
    if (!baseline) return cli::report_error(baseline.status());
    po.labels.clear();
    po.shard_id = names.at(candidate).id;
    if (candidates.size() > 1) po.labels.emplace_back("shard", names.at(candidate).label);
    // Given inputs are checked against the baseline's declared inputs, never coerced.
    {
      auto shard = Shard::open(*baseline);
      if (!shard) return cli::report_error(shard.status());
      const Function* fn = (*shard)->program().function(o.function);
      if (fn == nullptr) {
        return cli::report_error(make_error(ErrorCode::kUsage, "{}: no function '{}'", *baseline, o.function));
      }
      auto given = check_given_inputs(*files, *fn, *baseline, o.cast, run.notes);
      if (!given) return cli::report_error(given.status());
      po.given_inputs = std::move(*given);
    }
    po.precision = o.exec.precision_value();  // the inputs are made in the first view's precision
    po.base_inputs.clear();
    po.output_kinds = kinds;
    po.position_axes = axes;
    po.frames.clear();
    po.layer.reset();
    if (chain) {
      auto in = chain_probe_inputs(*chain, *goldens, candidate, *baseline, baseline_of,
                                   po.precision, po.threads, &chain_cache);
      if (!in) return cli::report_error(in.status());
      po.base_inputs = std::move(in->inputs);
      po.base_inputs_origin = fmt::format("the goldens of {} step '{}'", o.inputs_from, in->step_id);
      po.layer = in->layer;
      for (const auto& [name, kind] : in->output_kinds) po.output_kinds.emplace(name, kind);
      for (const auto& [name, axis] : in->position_axes) po.position_axes.emplace(name, axis);
      po.frames = in->frames;
      run.notes.insert(run.notes.end(), in->notes.begin(), in->notes.end());
      executed = std::move(in->executed);
    } else if (goldens) {
      for (const std::string& gi : o.golden_inputs) {
        const size_t eq = gi.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == gi.size()) {
          return cli::report_error(make_error(ErrorCode::kUsage, "--golden-input {}: expected NAME=TENSOR", gi));
        }
        auto t = goldens->load(gi.substr(eq + 1));
        if (!t) return cli::report_error(t.status());
        po.base_inputs[gi.substr(0, eq)] = std::move(*t);
      }
      po.base_inputs_origin = fmt::format("golden dump {}", o.inputs_from);
    }
    // --subnormals both: the same probe (same inputs) with subnormals kept, then flushed; the
    // checks of each carry their view's label.
    const bool both = o.exec.both_subnormal_views();
    const std::vector<Precision> precisions =
        both ? std::vector<Precision>{Precision::kFp16, Precision::kFp16Ftz}
             : std::vector<Precision>{po.precision};
    for (size_t view = 0; view < precisions.size(); ++view) {
      po.precision = precisions[view];
      auto result = probe_shard(candidate, *baseline, po);
      if (!result) return cli::report_error(result.status());
      if (both) {
        for (CheckResult& c : result->checks) c.identity.labels.push_back(subnormal_label(po.precision));
      }
      if (view > 0) {
        for (CheckResult& c : result->checks) run.checks.push_back(std::move(c));
        for (const std::string& n : result->notes) run.notes.push_back("[subnormals flush] " + n);
        for (const auto& [which, nf] : result->first_nonfinite) {
          run.notes.push_back(fmt::format("[subnormals flush] {}: {} shard: first non-finite value: {}",
                                          candidate, which, describe_nonfinite(nf)));
        }
        continue;
      }
      run.inputs.push_back({"candidate", candidate, result->candidate_sha256});
      run.inputs.push_back({"baseline", *baseline, result->baseline_sha256});
      note_self_probe(candidate, *baseline, run.notes);
      // Every shard executed, once each: input makers, the baseline, the candidate.
      auto add_shard = [&run](ReportShard sh) {
        for (const ReportShard& known : run.shards) {
          std::error_code ec;
          if (known.path == sh.path || std::filesystem::equivalent(known.path, sh.path, ec)) return;
        }
        run.shards.push_back(std::move(sh));
      };
      for (ReportShard& sh : executed) add_shard(std::move(sh));
      executed.clear();
      add_shard({"baseline", *baseline, result->baseline_fingerprint});
      add_shard({"candidate", candidate, result->candidate_fingerprint});
      for (CheckResult& c : result->checks) run.checks.push_back(std::move(c));
      run.notes.insert(run.notes.end(), result->notes.begin(), result->notes.end());
      for (const auto& [which, nf] : result->first_nonfinite) {
        run.notes.push_back(fmt::format("{}: {} shard: first non-finite value: {}", candidate,
                                        which, describe_nonfinite(nf)));
      }
    }
  }
  if (o.exec.both_subnormal_views()) {
    run.notes.push_back("subnormals both: every shard probed twice on the same inputs, with fp16 "
                        "subnormal results kept (subnormals=keep) and flushed to zero "
                        "(subnormals=flush); whether the ANE flushes them is not known here");
  }
  run.notes.push_back(fmt::format("precision {}, function '{}', rows are seeds {}..{}",
                                  o.exec.both_subnormal_views() ? "fp16 and fp16-ftz" : precision_name(po.precision),
                                  o.function, o.seed,
                                  o.seed + static_cast<uint64_t>(o.seeds) - 1));
  print_notes(run.notes, o.common.log.level());
  return cli::finish_golden_report(std::move(run), std::move(*policy), o.common);
}

}  // namespace

void add_probe_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ProbeCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "probe", "Quantized shards against their FP16 baselines on N seeds: golden inputs plus "
               "perturbations (--inputs-from) or seeded random inputs");
  sub->add_option("candidates", options->candidates,
                  "Quantized shard(s): paths, globs or directories of shards")
      ->option_text("SHARD...")
      ->required();
  options->baseline.add_to(*sub);
  sub->add_option("--function", options->function, "Function to probe")->default_val("main");
  sub->add_option("--seeds", options->seeds, "Number of seeds")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}))
      ->default_val(5);
  sub->add_option("--seed", options->seed, "First seed (seeds SEED .. SEED+N-1)")->default_val(0);
  sub->add_option("--input", options->inputs,
                  "An input from a .npy file, the same for every seed (repeatable)")
      ->option_text("NAME=FILE.npy");
  sub->add_flag("--cast", options->cast, kCastHelp);
  sub->add_option("--inputs-from", options->inputs_from,
                  "Realistic inputs: a chain manifest (the quantized or the FP16 chain; each "
                  "shard gets what its step receives from the goldens, earlier steps run with "
                  "their FP16 baselines), or a golden dump with --golden-input")
      ->option_text("CHAIN.json|GOLDENS");
  sub->add_option("--golden-input", options->golden_inputs,
                  "With a golden dump: shard input NAME takes golden TENSOR (repeatable)")
      ->option_text("NAME=TENSOR");
  sub->add_option("--perturbation", options->perturbation,
                  "With --inputs-from: seeds after the first add N(0,1) noise of this size "
                  "relative to each input vector's RMS")
      ->check(CLI::Range(0.0, 10.0))
      ->default_val(0.05);
  sub->add_option("--input-rms", options->input_rms,
                  "Random inputs: scale every last-axis vector to this RMS per element instead "
                  "of unit L2 norm (hidden states of real models have RMS ~1)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--input-scale", options->input_scale,
                  "Random inputs: multiply every drawn vector by this")
      ->check(CLI::PositiveNumber)
      ->default_val(1.0);
  sub->add_option("--stability-rms", options->stability_rms,
                  "Input-stability check: the baseline also runs on each input plus noise of this "
                  "size relative to the input's RMS; where its output moves below min_cosine the "
                  "seed is unstable, reported and excluded. 0: off")
      ->check(CLI::Range(0.0, 1.0))
      ->default_val(1e-2);
  sub->add_option("--output-kind", options->output_kinds,
                  "Kind of an output for the gate (e.g. moe_out=partial_sum; --inputs-from "
                  "infers it from the chain)")
      ->option_text("NAME=KIND");
  sub->add_option("--output-position-axis", options->position_axes,
                  "Position axis of an output (rows per seed and index along it), or 'none' for "
                  "one row per seed. Without it: axis 1 for outputs of rank >= 3, which is wrong "
                  "for channels-first outputs ([1, C, S]); --inputs-from takes it from the golden")
      ->option_text("NAME=N|none");
  sub->add_option("--calls", options->sequence.calls_dir,
                  "Sequence mode: the calls of a stateful shard (as exec: one subdirectory per "
                  "call or an .npz stacking them); each build carries its own state")
      ->option_text("DIR|FILE.npz")
      ->group("Sequence mode");
  sub->add_option("--chunk", options->sequence.chunk,
                  "Sequence mode: cut --input NAME along AXIS into chunks of SIZE, one call each")
      ->option_text("NAME:AXIS:SIZE")
      ->group("Sequence mode");
  sub->add_option("--offset-input", options->sequence.offset_input,
                  "With --chunk: this integer input gets the chunk's first index")
      ->option_text("NAME")
      ->group("Sequence mode");
  sub->add_option("--carry", options->sequence.carry,
                  "Sequence mode: output OUT of each call feeds input IN of the next, per build")
      ->option_text("OUT=IN")
      ->group("Sequence mode");
  options->exec.add_to(*sub);
  options->selection.add_to(*sub, "shards",
                            "each slice is judged on its own, merge does not read probe reports, "
                            "and a slice that selects no shard is a usage error, exit 2");
  options->common.add_to(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_probe(*options); }; });
}

}  // namespace sg::golden_cli
