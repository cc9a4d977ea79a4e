// Argument groups only golden-validator uses, next to the shared ones of args.h:
//  - ThresholdArgs: Polygraphy-style thresholds with per-checkpoint overrides,
//    `--min-cosine 0.97 hidden.3:0.95` (a bare value replaces the default; NAME:VALUE adds an
//    override for the checkpoints NAME matches, glob allowed), plus --percentile;
//  - MetricArgs: --topk;
//  - GoldenOutputArgs: --html, --all-positions, --no-color;
//  - GoldenCommonArgs: all of these with ReportArgs, GateArgs and LogArgs, for compare / run /
//    probe.
// And the two steps every command shares: building the policy, and emitting the reports.
#pragma once

#include "common/args.h"
#include "shardgate/gate_policy.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"
#include "shardgate/status.h"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace sg::cli {

inline constexpr const char* kGoldenValidatorVersion = kShardgateVersion;
// The policy used when --gate is not given and gates/<this> is found above the chain or the
// reference (find_gate_file).
inline constexpr const char* kDefaultFidelityGate = "fidelity.json";

// Which FP16 shard each candidate was converted from: --baseline SHARD (one candidate) or
// --baseline-replace OLD=NEW (the candidate's path with its last OLD replaced by NEW).
struct BaselineArgs {
  std::string baseline;
  std::string replace;

  void add_to(CLI::App& app);
  // Usage errors: both given, neither given when `required`, --baseline with several
  // candidates, a malformed OLD=NEW.
  Status validate(size_t candidates, bool required) const;
  // The baseline path of `candidate` ("" when neither option was given). Usage error when
  // OLD does not occur in the candidate's path.
  Result<std::string> baseline_of(const std::string& candidate) const;
  // The baseline of another shard of the candidate's chain (--inputs-from runs the earlier
  // steps with their baselines): only --baseline-replace can name it.
  Result<std::string> step_baseline_of(const std::string& shard) const;
};

// One option per metric of metrics.def (--min-cosine, --norm-ratio, ...), then --percentile.
struct ThresholdArgs {
  // What each metric's option was given, by Metric: VALUE | NAME:VALUE (the norm ratio: LO,HI
  // | NAME:LO,HI; 'none' switches a metric off).
  std::array<std::vector<std::string>, kMetricCount> by_metric;
  std::string percentile;                     // "5", "p5" or "min"

  void add_to(CLI::App& app);
  bool any() const;
  // Applies the options on top of `policy` (origin "--min-cosine" etc., reason "command line").
  Status apply(GatePolicy& policy) const;
};

struct MetricArgs {
  int64_t topk = 0;  // 0: the policy's k, else 5

  void add_to(CLI::App& app);
  MetricOptions options(const GatePolicy& policy) const;
};

// How the terminal table looks (--all-positions, --no-color); --html is a ReportArgs format.
struct GoldenOutputArgs {
  bool all_positions = false;
  bool no_color = false;

  void add_to(CLI::App& app);
};

// --position-axis N|none: the position axis of .safetensors tensors without position metadata
// (otherwise refused as references).
struct GoldenInputArgs {
  std::string position_axis;

  void add_to(CLI::App& app);
  Result<GoldenOpenOptions> options() const;
};

// The groups of every command that measures and gates (compare, run, probe): reports, gate,
// log level, thresholds, --topk and the golden outputs, added in that order.
struct GoldenCommonArgs {
  ReportArgs reports;
  GateArgs gate;
  LogArgs log;
  ThresholdArgs thresholds;
  MetricArgs metrics;
  GoldenOutputArgs output;

  // `without`: report formats the command's report kind has no form of (ReportArgs::add_to).
  void add_to(CLI::App& app, std::initializer_list<ReportFormat> without = {});
};

// --gate FILE, else gates/fidelity.json found from the anchors' directories upward to the
// repository root (find_gate_file: the chain manifest, the reference dump or the shards the
// command judges; never the current directory), else the built-in policy; then the threshold
// options applied on top.
Result<GatePolicy> build_gate_policy(const GateArgs& gate, const ThresholdArgs& thresholds,
                                     const std::vector<std::string>& anchors);
// The same, then an explicit --topk wins over the policy's k (like every command-line threshold).
Result<GatePolicy> build_gate_policy(const GoldenCommonArgs& args,
                                     const std::vector<std::string>& anchors);

// The end of every comparing command: records the gate file among the run's inputs, builds the
// report and emits it (see emit_golden_report); returns the exit code.
// `amend` (optional) adds to the report after its verdict and before it is written (run
// --culprits); its error is the command's.
int finish_golden_report(FidelityRun run, GatePolicy policy, const GoldenCommonArgs& args,
                         const std::function<Status(GoldenReport&)>& amend = {});


int emit_golden_report(const GoldenReport& report, const ReportArgs& reports,
                       const GoldenOutputArgs& output, const LogArgs& log);


// For errors after the options were parsed: writes every report `args` asks for with the
// error as its verdict (golden_error_report), then prints and returns like report_error.
int report_error(const Status& status, const std::string& command, const GoldenCommonArgs& args);

// Prints "golden-validator: <error kind>: <message>" and returns exit_code(status.code()).
int report_error(const Status& status);

}  // namespace sg::cli
