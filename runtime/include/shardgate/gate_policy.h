// Fidelity gate policies (gates/fidelity.json) and their evaluation over measured checks.
//
// A policy has default thresholds, each with a written reason, and ordered overrides matched
// by checkpoint name (glob), kind, layer (index or range) and shard id (glob); every override
// carries a reason. Later overrides win. A check is gated on a *statistic* over its
// non-degenerate rows: the minimum (the default) or a stated percentile pN, taken at the bad
// end of each metric (the low end for cosine / SNR / top-k, the high end for errors and KL,
// both ends for the norm ratio). Never the mean. Top-1 is the exception: it is a rate, the
// share of rows whose argmax agrees. All checks must pass for the run to pass.
#pragma once

#include "shardgate/fidelity.h"
#include "shardgate/glob.h"
#include "shardgate/status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

inline constexpr std::string_view kFidelityGateSchema = "shardgate/fidelity-gate@1";

// One threshold of one metric. For kNormRatio both bounds may be set; for other metrics only
// `bound` is used: a lower bound for higher-is-better metrics, an upper bound otherwise.
struct Threshold {
  std::optional<double> bound;
  std::optional<double> upper;  // kNormRatio only: the upper bound (bound is the lower one)
  std::string reason;           // why this value (from the policy file or the command line)
  std::string origin;           // "defaults", "overrides[2]", "--min-cosine"
};

// A partial set of thresholds (what an override carries).
struct ThresholdSet {
  std::array<std::optional<Threshold>, kMetricCount> metrics{};
  std::optional<double> percentile;  // 0 = min; otherwise pN with 0 < N < 50
  std::string percentile_reason;

  std::optional<Threshold>& at(Metric m) { return metrics[static_cast<size_t>(m)]; }
  const std::optional<Threshold>& at(Metric m) const { return metrics[static_cast<size_t>(m)]; }
};

struct OverrideMatch {
  std::optional<std::string> checkpoint;  // glob with * and ?, matched against the name
  std::optional<std::string> kind;
  std::optional<int64_t> layer_min;       // "layer": 3 sets both; "layer": [2, 5] a range
  std::optional<int64_t> layer_max;
  std::optional<std::string> shard;       // glob against CheckIdentity::shard
};

struct GateOverride {
  OverrideMatch match;
  ThresholdSet thresholds;
  std::string reason;  // required
  std::string origin;  // "overrides[2]" or "command line"
};

// What every report says beside the policy's source when threshold options changed it.
inline constexpr const char* kAdjustedOnCommandLine = "adjusted on the command line";

struct GatePolicy {
  std::string source = "built-in";  // file path, or "built-in"
  std::string sha256;               // of the policy file ("" when built in)
  std::string description;
  ThresholdSet defaults;
  std::vector<GateOverride> overrides;
  std::optional<int64_t> topk;      // k for top-k overlap, when the policy wants a specific k
  // Threshold options changed the thresholds read from `source`. A flag, not text in the
  // description: saved reports carry it (policy.adjusted_on_command_line), so a regate of one
  // still says so.
  bool adjusted_on_command_line = false;
};

// A bound outside its metric's range would pass or fail everything silently, so both the policy
// file and the command line refuse it. Returns what the range is ("a cosine lies in [-1, 1]")
// when `bound` is outside it (or NaN), nullopt when it is a possible value. The norm ratio's
// [low, high] pair is checked apart (0 <= low <= high).
std::optional<std::string> threshold_out_of_range(Metric metric, double bound);

// The built-in policy: min cosine 0.97 and norm ratio in [0.8, 1.25], gated on the minimum;
// equal to the defaults of gates/fidelity.json.
GatePolicy builtin_gate_policy();
// Parses gates/fidelity.json text. Unknown keys, thresholds without reasons, overrides
// without a reason or a match, bounds outside their metric's range (threshold_out_of_range) and
// percentiles outside [0, 50) are kFormat errors naming `path` and the JSON place.
Result<GatePolicy> parse_gate_policy(std::string_view json_text, const std::string& path);
Result<GatePolicy> load_gate_policy(const std::string& path);
// The policy as JSON (the same shape parse_gate_policy reads), for reports.
std::string gate_policy_json(const GatePolicy& policy);

// The metric options a run under `policy` measures with: k of the top-k overlap is
// `requested_topk` when the caller names one (> 0, the CLI's --topk), else the policy's "topk",
// else MetricOptions' default. A gate file with a "topk" refuses a run measured with another k,
// so every front end (CLI, Python) takes k from here.
MetricOptions policy_metric_options(const GatePolicy& policy, int64_t requested_topk = 0);

// Thresholds in effect for one check, after defaults and every matching override.
struct ResolvedThresholds {
  std::array<std::optional<Threshold>, kMetricCount> metrics{};
  double percentile = 0;  // 0 = min
  std::string percentile_origin = "defaults";
  const std::optional<Threshold>& at(Metric m) const { return metrics[static_cast<size_t>(m)]; }
};
ResolvedThresholds resolve_thresholds(const GatePolicy& policy, const CheckIdentity& identity);
// Whether an override's match (checkpoint / shard globs, kind, layer range) selects the check.
bool override_matches(const OverrideMatch& m, const CheckIdentity& id);

enum class Verdict : uint8_t {
  kPass = 0,
  kFail,
  kNotGated,    // metric (or check) measured but no threshold applies to it
  kDegenerate,  // row: both vectors zero, excluded
  kNonfinite,   // NaN/Inf found
  kNoEvidence,  // every row degenerate or unstable (or no row at all)
  kUnstable,    // row: the baseline itself moves more than the gate allows (probe), excluded
  kExcluded,    // check: depends on an op a device does not reproduce (CheckResult::excluded)
};
const char* verdict_name(Verdict v);  // "pass", "fail", "not_gated", "degenerate", ...

// A check verdict that neither passes nor fails the gate: measured and reported, judged by
// nothing (excluded, or no threshold applies to any metric it has).
inline bool is_unjudged(Verdict v) { return v == Verdict::kExcluded || v == Verdict::kNotGated; }

// The gated statistic of one metric of one check.
struct MetricVerdict {
  Metric metric = Metric::kCosine;
  std::string statistic;                // "min", "max", "p5", "p95", "rate", "min/max", ...
  std::optional<double> value;          // the statistic (the low end for the norm ratio)
  std::optional<double> value_upper;    // kNormRatio: the high-end statistic
  std::optional<Threshold> threshold;
  Verdict verdict = Verdict::kNotGated;
  int64_t worst_position = -1;          // the row with the worst value (-1 when none)
  int64_t worst_row = -1;               // its index in CheckResult::rows (-1 when none)
};

struct RowVerdict {
  Verdict verdict = Verdict::kPass;
  std::vector<Metric> failed;  // metrics whose row value violates the threshold
};

struct CheckVerdict {
  Verdict verdict = Verdict::kPass;
  std::string message;                   // one line saying why (for failures)
  std::vector<MetricVerdict> metrics;    // measured metrics, in Metric order
  std::vector<RowVerdict> rows;          // parallel to CheckResult::rows
  double percentile = 0;
  int64_t first_failing_position = -1;   // first row violating a threshold (-1: none)
  int64_t first_failing_row = -1;        // its index in CheckResult::rows
  int64_t unstable_rows = 0;
  // Rows excluded as unstable, each with its margin: "2 of 5 seeds unstable (excluded): ...".
  std::string unstable_note;
};

struct GateSummary {
  Verdict verdict = Verdict::kFail;  // kPass only when at least one check ran and all passed
  int64_t checks = 0, passed = 0, failed = 0;
  int64_t rows = 0, degenerate_rows = 0, unstable_rows = 0;
  int64_t excluded = 0;  // checks left out of the gate (CheckResult::excluded); not in `checks`
  int64_t not_gated = 0; // checks no threshold applies to (every metric's is off); not in `checks`
  // The first failing check in layer order (then report order) and its first failing row.
  std::optional<size_t> first_failure_check;
  int64_t first_failure_position = -1;
  int64_t first_failure_row = -1;  // index into that check's rows
  std::optional<Metric> first_failure_metric;
  std::string message;
};

struct GateEvaluation {
  std::vector<CheckVerdict> checks;  // parallel to FidelityRun::checks
  GateSummary summary;
};

// A value judged against a threshold, as text: `digits` decimals (`fixed`) or significant
// digits, and more digits while fewer would read as the other side of the threshold than the
// value is (0.96999996 printed "0.97000" beside "needs >= 0.97" made a failure look like a
// pass). NaN is "nan", infinities "inf" / "-inf". Without a threshold, the plain rounding.
std::string gated_value_text(Metric m, double v, const std::optional<Threshold>& t, int digits,
                             bool fixed);

// Applies `policy` to every check of `run`. `strict`: reference tensors without a candidate
// fail the run. Fails (kUsage) when the policy asks for a top-k other than the one measured.
Result<GateEvaluation> evaluate_gate(const FidelityRun& run, const GatePolicy& policy,
                                     bool strict = false);

}  // namespace sg
