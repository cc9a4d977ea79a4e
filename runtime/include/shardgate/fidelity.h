// The comparison engine shared by every golden-validator command (compare, run, probe, ...).
//
// A *check* is one checkpoint tensor compared against its reference: it is split into *rows*
// along the tensor's position axis (one row per token position; one row in total when the
// tensor has no position axis), and every row gets the metrics of metrics.h. Checks hold raw
// metric values only; thresholds and verdicts come from a GatePolicy (gate_policy.h), so a
// saved report can be re-gated without re-running anything.
//
// Rules (README.md, Metrics): shape or dtype-class mismatch is an input error (kShape, exit 2), never a
// silent reshape; NaN/Inf in either tensor fails the check and names the tensor, the first flat
// index and its position; rows where both vectors are zero are "degenerate" and excluded from
// the gate; a check whose rows are all degenerate fails ("no evidence").
#pragma once

#include "shardgate/provenance.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sg {

class GoldenSource;

// The metrics, from the table in metrics.def (names, gate keys, options, ranges).
enum class Metric : uint8_t {
#define SG_METRIC(id, ...) id,
#include "shardgate/metrics.def"
#undef SG_METRIC
};
inline constexpr size_t kMetricCount = 0
#define SG_METRIC(...) +1
#include "shardgate/metrics.def"
#undef SG_METRIC
    ;

// One row of metrics.def.
struct MetricInfo {
  Metric metric;
  const char* name;      // "cosine", "norm_ratio", ... (metric_name)
  const char* gate_key;  // "min_cosine", ... in gates/fidelity.json
  const char* flag;      // "--min-cosine", ... on the command line
  // Whether larger values are better. norm_ratio is two-sided; its primary bound is the lower.
  bool higher_is_better;
  double range_lo, range_hi;  // where a threshold may lie
  const char* range_text;     // why ("a cosine lies in [-1, 1]")
  const char* help;           // the option's --help text
};
// Every metric, in enum order.
const std::array<MetricInfo, kMetricCount>& metric_table();
const MetricInfo& metric_info(Metric m);
const char* metric_name(Metric m);
std::optional<Metric> metric_from_name(std::string_view name);
bool metric_higher_is_better(Metric m);

// Stable identity of a check: what a report line, a JUnit test case and an override match on.
struct CheckIdentity {
  std::string checkpoint;             // tensor / checkpoint name, e.g. "hidden.3", "logits"
  std::string kind;                   // "hidden", "logits", "output", "state", ...
  std::optional<int64_t> layer;       // layer index; -1 for the embedding output
  std::string shard;                  // shard or step id when the check belongs to one (may be "")
  // Free-form labels a command adds (e.g. {"seed","3"}, {"mode","teacher-forced"}); they are
  // part of the identity and appear in every report.
  std::vector<std::pair<std::string, std::string>> labels;

  // "hidden.3", or "hidden.3[seed=3,mode=teacher-forced]" when labels are present.
  std::string id() const;
};

// One position of a check. Absent metrics were not computed (e.g. logits metrics on hidden
// states, every metric on a degenerate or non-finite row).
struct RowResult {
  int64_t position = -1;   // index along the position axis; -1 when the tensor has none
  std::optional<int64_t> seed;  // probe: the seed whose input made this row
  bool degenerate = false;  // both vectors all zero
  bool nonfinite = false;   // NaN or Inf in this row of either tensor
  // probe's input-stability check: cosine between the baseline's outputs on this row's input
  // and on a tiny perturbation of it (probe.h). Below the gate's min_cosine the row is
  // `unstable`: reported with its margin, excluded from the gate like a degenerate row.
  std::optional<double> stability_cosine;
  std::array<std::optional<double>, kMetricCount> values{};

  const std::optional<double>& value(Metric m) const { return values[static_cast<size_t>(m)]; }
  std::optional<double>& value(Metric m) { return values[static_cast<size_t>(m)]; }
};

// The place of a row in messages: "position 4", "seed 3", "seed 3 position 4".
std::string row_place(const RowResult& row);

// Where the first NaN/Inf was found.
struct NonfiniteLocation {
  std::string tensor;       // "candidate" or "reference"
  int64_t flat_index = 0;   // row-major index into the whole tensor
  int64_t position = -1;    // its position along the position axis (-1 when none)
  double value = 0;         // the offending value (NaN, +inf or -inf)
};

struct CheckResult {
  CheckIdentity identity;
  Shape shape;
  std::string candidate_dtype;  // dtype names as in dtype_name()
  std::string reference_dtype;
  int64_t position_axis = -1;   // -1: the whole tensor is one row
  // What a row is, in every message and report: "position" (a token position along the
  // position axis) or "seed" (probe: one row per seeded input, or per seed and position when
  // the output has a position axis; RowResult::seed is set).
  std::string row_axis = "position";
  std::vector<RowResult> rows;
  std::optional<NonfiniteLocation> nonfinite;
  // Why this check proves nothing about fidelity and is left out of the gate ("" when it is
  // gated): the tensor depends on an op a device does not reproduce (random_*: "step 'noisy'
  // output 'y' depends on random_normal op #3 'noise'"). Its metrics are still measured and
  // reported; its verdict is "excluded".
  std::string excluded;
};

struct MetricOptions {
  int64_t topk = 5;  // k of the top-k overlap (logits only)
};

struct NonFinite;  // shardgate/executor.h: the first op output of a run holding NaN/Inf

// "function 'main', op #12 'softmax' output 'attn' flat index 34 = nan": the facts of a
// NonFinite, for the notes and errors of exec, probe, record and run.
std::string describe_nonfinite(const NonFinite& nf);

struct RunResult;  // shardgate/executor.h
// Whether a NaN/Inf that a run produced reached the function's outputs or later ops washed it
// out, in one sentence for exec's report: "it reaches output 'raw' (16 of 32 values
// non-finite); output 'clipped' is finite: later ops washed it out; NaN/Inf in 2 op outputs, the
// last op #4 'add' output 'raw'", or "every output is finite: later ops washed it out (...)".
// "" when the run produced none.
std::string nonfinite_reach(const RunResult& run);

// Compares one candidate tensor against its reference. `position_axis` may be negative
// (counted from the end) or absent. Logits metrics are computed when identity.kind is
// "logits"; their vector is the last axis. Errors (kShape): shape or dtype-class mismatch,
// position axis out of range, string tensors; kUsage: topk < 1.
Result<CheckResult> compare_tensors(const CheckIdentity& identity, const Tensor& candidate,
                                    const Tensor& reference, std::optional<int64_t> position_axis,
                                    const MetricOptions& options);

// Where one shard input of a step came from in one view of a run.
struct StepFeed {
  std::string step;    // chain step id
  std::string input;   // shard input name
  std::string tensor;  // the chain tensor the manifest wires to it
  std::string source;  // "golden" (fed the golden entry instead), "chain output", "chain input"
  std::string golden;  // the golden entry fed ("" unless source is "golden")
};

// One way a command fed the shards (run: "free-running" or "teacher-forced"): what a verdict
// of this view answers, and per step the input each shard was given.
struct ReportView {
  std::string mode;
  std::string answers;
  std::vector<StepFeed> feeds;
};

// CI fan-out of `run --teacher-forced` (README "Fan-out across CI jobs"). Teacher-forced steps
// are independent only in groups: a step that reads a chain tensor which teacher forcing does
// not replace by a golden (an MoE pack reading its layer's attention output, a `sum`) must run
// in the job that made the tensor. So the chain's steps are cut into *groups*, contiguous runs
// of steps between which only goldens pass (teacher_forced_groups(), chain.h), and group g
// belongs to slice g % count == index, as ane-validator's shard p belongs to p % count. Every
// teacher-forced-only run records its slice (index 0 of 1 when not split), so a merged report
// (merge_golden_reports) equals a single-job run.
struct SliceGroup {
  int64_t index = 0;               // among all groups of the chain
  std::vector<std::string> steps;  // step ids, manifest order
};
struct RunSlice {
  int64_t index = 0;
  int64_t count = 1;
  int64_t groups_total = 0;
  std::vector<SliceGroup> groups;              // the groups this job ran
  std::vector<std::string> chain_steps;        // every step id of the chain, manifest order
  std::vector<std::string> chain_checkpoints;  // every checkpoint's golden, manifest order

  bool empty() const { return groups.empty(); }
  // "slice 6 of 7 selects none of the 6 teacher-forced step groups: nothing to check in this job"
  std::string empty_note() const;
};

// Everything a command measured, before any gate is applied.
struct FidelityRun {
  std::string command;              // "compare", "run", "probe", ...
  std::vector<ReportInput> inputs;
  std::vector<ReportShard> shards;  // every shard executed, once each, in run order
  std::vector<ReportView> views;    // run: the views in the order they ran
  MetricOptions options;
  std::vector<CheckResult> checks;
  std::vector<std::string> reference_only;  // reference tensors the candidate lacks
  std::vector<std::string> candidate_only;  // candidate tensors with no reference
  std::vector<std::string> notes;           // anything else a reader should know
  std::optional<RunSlice> slice;            // run --teacher-forced only
};

// Golden dumps covering several calls of a stateful model (a KV decoder over a prompt, a VAD over
// a clip): a directory WITHOUT manifest.json whose subdirectories call_000/, call_001/, ...
// (taken in numeric order) are each a golden dump of one call — the layout `exec --out` writes
// in sequence mode. Returns the call directory names in order, or an empty list when `path` is
// a single dump (a file, or a directory with manifest.json). kUsage when it is neither.
Result<std::vector<std::string>> sequence_dump_calls(const std::string& path);

struct GoldenOpenOptions;  // shardgate/golden.h
// compare over a sequence: candidate and reference must hold the same calls; every call is
// compared like compare_sources and its checks carry the label {"call", "call_003"}, so a
// report names the call of every failing row. Mixing a sequence and a single dump, or a call
// present on one side only, is kUsage naming the call.
Result<FidelityRun> compare_sequences(const std::string& candidate, const std::string& reference,
                                      const GoldenOpenOptions& open, const MetricOptions& options);

// --subnormals both: one run of a command with fp16 subnormal results kept and one with them
// flushed to zero (Precision::kFp16Ftz), joined into one run whose checks carry the label
// {"subnormals", "keep"|"flush"}: the gate then judges both, and every report shows both views
// side by side. Inputs, shards and views (the same feeds in both) are listed once; the flush
// run's notes are prefixed "[subnormals flush]".
FidelityRun join_subnormal_views(FidelityRun keep, FidelityRun flush);

// Compares every reference tensor that the candidate also holds (matched by name). Tensors of
// kind "input" are not scored: they must be exactly equal (else kShape: the dumps were taken
// on different prompts). Position axis, kind and layer come from the reference's entries.
// Fails with kUsage when no tensor matches at all.
Result<FidelityRun> compare_sources(const GoldenSource& candidate, const GoldenSource& reference,
                                    const MetricOptions& options);

}  // namespace sg
