// Precision advice (`golden-validator advise`): which compressed weights of a failing chain to
// keep at fp16 so that the chain passes its gate. The tool recommends; the user re-converts.
//
// Candidates are the compressed weights of the chain's shards that have an FP16 baseline
// weight, ranked by measured sensitivity: first the weights read by culprit source ops (the
// ops where the error enters, culprits.h), most damaged output first; then the others by the
// weight diagnostics' error (measured against the baseline, else estimated). The search adds
// candidates in rank order, re-running the chain each time with the chosen weights replaced
// in memory by their baseline's fp16 values (RunOptions::weight_overrides), until the gate
// passes; then it tries to drop each chosen weight once and keeps the drop when the gate
// still passes. Every chain run counts against a bound.
#pragma once

#include "shardgate/provenance.h"

#include "shardgate/culprits.h"
#include "shardgate/fidelity.h"
#include "shardgate/gate_policy.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg {

// "shardgate/advice@2". 2: the shared envelope (report_envelope.h): verdict "pass" when a set
// was found or the chain passes as built, "fail" (exit 1) when none was found within the
// bound; the search's outcome is summary.outcome.
inline constexpr int kAdviceReportVersion = 2;

// One shard step of the chain with its baseline, as the candidates are read from it.
struct AdviceShard {
  std::string step;  // chain step id
  std::shared_ptr<const Shard> candidate, baseline;
  std::string function = "main";
};

struct AdviceCandidate {
  std::string step;            // the first chain step running this shard
  std::string shard;           // candidate shard path
  std::string baseline;        // baseline shard path
  std::string function;
  std::string value;           // the compile-time value in the candidate (what is overridden)
  std::string baseline_value;  // the baseline's weight with the same use
  std::string key;             // its use, e.g. "experts_gate.weight"
  std::string form;            // e.g. "int8 linear, 1 scale per tensor"
  std::vector<std::string> readers;  // the runtime ops reading it, e.g. "#38 linear 'experts_gate'"
  // Which evidence ranked it: "culprit" (read by a source op) or "weights" (diagnostics).
  std::string evidence;
  std::string evidence_text;   // the facts, in words
  double sensitivity = 0;      // culprit: 1 - the source op's cosine; weights: relative error
  int64_t elements = 0;
  int64_t fp16_bytes = 0;        // 2 bytes per element
  int64_t compressed_bytes = 0;  // the constexpr inputs it is decoded from, as stored
  int64_t added_bytes() const { return fp16_bytes - compressed_bytes; }
};

// The candidates of `shards` in rank order (see the file comment). `culprits` may be null (no
// culprit evidence). A weight without a baseline weight is no candidate; a note says so.
Result<std::vector<AdviceCandidate>> advice_candidates(const std::vector<AdviceShard>& shards,
                                                       const std::vector<CulpritResult>* culprits,
                                                       std::vector<std::string>& notes);

// One chain run of the search.
struct AdviceTrial {
  int64_t run = 0;             // 1-based, counting every chain run of the command
  std::string action;          // "add" or "drop"
  size_t candidate = 0;        // index into the ranked candidates
  size_t set_size = 0;         // weights kept fp16 in this run
  bool passes = false;
  bool kept = false;           // add: always; drop: the drop was kept (the gate still passed)
  std::string summary;         // the run's summary message
};

struct AdviceSearch {
  std::vector<size_t> chosen;  // indices into the candidates, in rank order
  bool found = false;
  std::string stopped;         // why the search ended, in words
  std::vector<AdviceTrial> trials;
  int64_t runs = 0;            // chain runs made (including those before the search)
};

// What one trial run says: whether the gate passes with the candidates `set` kept fp16, and
// its summary message.
struct AdviceVerdict {
  bool passes = false;
  std::string summary;
};
using AdviceEvaluator = std::function<Result<AdviceVerdict>(const std::vector<size_t>& set)>;

// Greedy then prune over `candidates` candidates in rank order. `runs_used` chain runs were
// made already (they count against `max_runs`). The answer is always the set of the last
// passing run (a kept drop passed; a rejected one did not change the set), so a caller keeps
// that run's report.
Result<AdviceSearch> search_advice(size_t candidates, int64_t max_runs, int64_t runs_used,
                                   const AdviceEvaluator& evaluate);

// One metric of one check, before and after.
struct AdviceMetric {
  std::string metric;     // metric_name()
  std::string statistic;  // "min", "p10", "min/max", ...
  std::optional<double> before, before_upper, after, after_upper;
  std::string verdict_before, verdict_after;
  // The row (position) holding the worst value, -1 when none (MetricVerdict::worst_position).
  int64_t worst_position_before = -1, worst_position_after = -1;
  std::optional<double> bound, upper;  // the threshold
};

struct AdviceCheck {
  std::string id;
  std::string verdict_before, verdict_after;
  std::vector<AdviceMetric> metrics;  // the gated ones
};

// Pairs the checks of two reports of the same chain (by id).
std::vector<AdviceCheck> advice_checks(const FidelityRun& run_before, const GateEvaluation& before,
                                       const FidelityRun* run_after, const GateEvaluation* after);

struct AdviceResult {
  std::string tool_version;
  // What the run as built judged: the gate file, the chain and goldens, every shard with its
  // fingerprint (the envelope's provenance of that run).
  ReportProvenance provenance;
  std::vector<std::string> command_line;
  std::string chain;           // manifest path
  std::string chain_sha256;
  std::string views;           // e.g. "free-running"
  std::string baseline_replace;
  int64_t max_runs = 0;
  bool already_passes = false;  // the chain passed as it is: nothing searched
  // The gate judged nothing as built (every check excluded or without a threshold): nothing
  // searched, and the report's verdict is no_evidence, as `run`'s is on the same chain.
  bool no_evidence = false;
  std::string verdict_before, verdict_after;  // summary messages
  std::vector<AdviceCandidate> candidates;    // ranked
  AdviceSearch search;
  std::vector<AdviceCheck> checks;
  std::string culprits_note;
  std::vector<std::string> notes;
  double seconds = 0;
  int64_t added_bytes() const;  // over the chosen weights
  // 0 a passing set was found (or the chain passes already), 1 none within the bound.
  int exit_code() const;
};

}  // namespace sg
