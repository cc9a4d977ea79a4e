// golden-validator culprits: where the error of quantized shards enters, op by op, against
// their FP16 baselines on the same inputs (culprits.h). Inputs: the goldens of the shard's
// chain step (--inputs-from CHAIN.json, as probe uses them), given .npy files, or seeded random.
// A diagnosis, not a gate. Exit codes: 0 the search ran (whatever it found), 2 bad input or
// usage, 3 internal error.
#include "common/args.h"
#include "common/golden_args.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "shardgate/chain.h"
#include "shardgate/culprit_report.h"
#include "shardgate/golden.h"
#include "shardgate/probe.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>
#include <optional>

namespace sg::golden_cli {
namespace {

struct CulpritsOptions {
  std::vector<std::string> candidates;
  cli::BaselineArgs baseline;
  std::string function = "main";
  std::vector<std::string> inputs;
  bool cast = false;
  std::string inputs_from;
  uint64_t seed = 0;
  std::optional<double> input_rms;
  double min_cosine = 0.97;
  size_t top = 10;
  bool all = false;
  ExecArgs exec;
  cli::ReportArgs reports;
  cli::LogArgs log;
};

int run_culprits(const CulpritsOptions& o) {
  if (Status s = o.log.validate(); !s.is_ok()) return cli::report_error(s);
  if (!(o.min_cosine >= -1.0 && o.min_cosine <= 1.0)) {
    return cli::report_error(make_error(ErrorCode::kUsage, "--min-cosine {} is outside [-1, 1]", o.min_cosine));
  }
  auto candidates = cli::expand_shard_paths(o.candidates);
  if (!candidates) return cli::report_error(candidates.status());
  if (Status s = o.baseline.validate(candidates->size(), /*required=*/true); !s.is_ok()) {
    return cli::report_error(s);
  }
  auto files = read_named_inputs(o.inputs);
  if (!files) return cli::report_error(files.status());
  std::optional<ChainManifest> chain;
  std::unique_ptr<GoldenSource> goldens;
  if (!o.inputs_from.empty()) {
    auto c = load_chain_manifest(o.inputs_from);
    if (!c) return cli::report_error(c.status());
    if (c->goldens.empty()) {
      return cli::report_error(make_error(ErrorCode::kUsage, "--inputs-from {}: the chain names no golden dump", o.inputs_from));
    }
    auto g = open_golden_source(c->goldens);
    if (!g) return cli::report_error(g.status());
    goldens = std::move(*g);
    chain = std::move(*c);
  }
  const std::function<Result<std::string>(const std::string&)> baseline_of =
      [&o](const std::string& shard) { return o.baseline.step_baseline_of(shard); };

  CulpritReport report;
  report.tool_version = cli::kGoldenValidatorVersion;
  report.command_line = cli::command_line();
  std::vector<std::string> notes;
  ChainProbeCache chain_cache;  // FP16 baseline steps run for --inputs-from, kept across shards
  for (const std::string& path : *candidates) {
    auto base_path = o.baseline.baseline_of(path);
    if (!base_path) return cli::report_error(base_path.status());
    auto cand = Shard::open(path);
    if (!cand) return cli::report_error(cand.status());
    auto base = Shard::open(*base_path);
    if (!base) return cli::report_error(base.status());
    const Function* fn = (*base)->program().function(o.function);
    if (fn == nullptr) {
      return cli::report_error(make_error(ErrorCode::kUsage, "{}: no function '{}'", *base_path, o.function));
    }
    auto given = check_given_inputs(*files, *fn, *base_path, o.cast, notes);
    if (!given) return cli::report_error(given.status());
    CulpritOptions co;
    co.function = o.function;
    co.precision = o.exec.precision_value();
    co.threads = o.exec.threads;
    co.min_cosine = o.min_cosine;
    if (chain) {
      auto in = chain_probe_inputs(*chain, *goldens, path, *base_path, baseline_of, co.precision,
                                   co.threads, &chain_cache);
      if (!in) return cli::report_error(in.status());
      co.inputs = std::move(in->inputs);
      for (auto& [name, t] : *given) co.inputs[name] = std::move(t);
      report.inputs = fmt::format("the goldens of {} (each shard's step, as probe --inputs-from)", o.inputs_from);
    } else {
      InputScale scale;
      scale.rms = o.input_rms;
      auto seeded = make_seeded_inputs(**base, o.function, o.seed, *given, scale);
      if (!seeded) return cli::report_error(seeded.status());
      co.inputs = std::move(seeded->inputs);
      notes.insert(notes.end(), seeded->notes.begin(), seeded->notes.end());
      // Say only what happened: every input random, or which ones came from files.
      std::vector<std::string> named;
      for (const auto& [name, t] : *given) named.push_back(name);
      report.inputs = named.empty()
                          ? fmt::format("seed {}: every input random {}", o.seed, scale.describe())
                          : fmt::format("seed {}: {} from --input, the others random {}", o.seed,
                                        fmt::join(named, ", "), scale.describe());
    }
    auto result = find_culprits(*cand, *base, co);
    if (!result) return cli::report_error(result.status());
    report.shards.push_back(std::move(*result));
  }
  report.top = o.top;
  if (Status s = o.reports.write(report); !s.is_ok()) {
    return cli::report_error(s);
  }
  print_notes(notes, o.log.level());
  if (o.log.level() >= 0) {
    std::cout << culprit_report_table(report, o.top, o.all || o.log.level() > 0);
  } else {
    std::cout << fmt::format("culprits: {} shard(s), {} source op(s)\n", report.shards.size(),
                             report.source_ops());
  }
  return kExitPass;
}

}  // namespace

void add_culprits_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<CulpritsOptions>();
  CLI::App* sub = app.add_subcommand(
      "culprits",
      "Find the ops where a quantized shard's error enters: align it with its FP16 baseline, run "
      "both on the same inputs, compare every op output");
  sub->add_option("candidates", o->candidates, "Quantized shard(s): paths, globs or directories")
      ->option_text("SHARD...")
      ->required();
  o->baseline.add_to(*sub);
  sub->add_option("--function", o->function, "Function to run")->capture_default_str();
  sub->add_option("--input", o->inputs, "An input from a .npy file (repeatable)")->option_text("NAME=FILE.npy");
  sub->add_flag("--cast", o->cast, kCastHelp);
  sub->add_option("--inputs-from", o->inputs_from,
                  "Realistic inputs: a chain manifest; each shard gets what its step receives "
                  "from the goldens (as probe --inputs-from)")
      ->option_text("CHAIN.json");
  sub->add_option("--seed", o->seed, "Seed of the random inputs (without --inputs-from)")->capture_default_str();
  sub->add_option("--input-rms", o->input_rms, "Random inputs: every last-axis vector scaled to this RMS per element")
      ->check(CLI::PositiveNumber);
  sub->add_option("--min-cosine", o->min_cosine, "An op output whose worst position is below this fails")
      ->capture_default_str();
  sub->add_option("--top", o->top, "How many of the ops adding the most error to list")->capture_default_str();
  sub->add_flag("--all", o->all, "List every aligned op");
  o->exec.add_to(*sub);
  o->reports.add_to(*sub, {ReportFormat::kHtml});
  o->log.add_to(*sub);
  sub->callback([&result, o] { result.run = [o] { return run_culprits(*o); }; });
}

}  // namespace sg::golden_cli
