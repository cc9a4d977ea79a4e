// Chains: shards wired into a model by a chain manifest (schema "shardgate/chain@1", documented
// in goldens/README.md, JSON Schema reports/schema/chain.schema.json), and running them.
//
// A chain runs one shard at a time: open, execute, release, so peak memory is bounded by the
// largest shard plus the chain tensors still waiting for a consumer. Every chain tensor is
// released after its last consumer, except the checkpoints (and tensors asked for by name),
// which are handed back to the caller for comparison or recording.
#pragma once

#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

class GoldenSource;

inline constexpr std::string_view kChainSchema = "shardgate/chain@1";

// Where a chain input comes from: "golden:NAME" (tensor NAME of the chain's golden dump) or
// "npy:PATH" (a .npy file, PATH relative to the manifest).
struct ChainInput {
  enum class Source : uint8_t { kGolden, kNpy };
  std::string tensor;   // chain tensor name
  Source source = Source::kGolden;
  std::string ref;      // golden entry name, or the resolved .npy path
  std::string written;  // the source as written in the manifest
};

enum class CombineKind : uint8_t { kSum, kConcat };

struct ChainStep {
  std::string id;
  std::optional<int64_t> layer;
  bool is_combine = false;

  // Shard step.
  std::string shard;          // resolved path (manifest directory + path as written)
  std::string shard_written;  // path as written in the manifest
  std::string function = "main";
  std::vector<std::pair<std::string, std::string>> inputs;   // shard input -> chain tensor
  std::vector<std::pair<std::string, std::string>> outputs;  // shard output -> chain tensor
  std::optional<std::string> residual_input;                 // a key of `inputs`
  std::vector<std::pair<std::string, std::string>> state;    // shard state -> chain state key

  // Combine step.
  CombineKind combine = CombineKind::kSum;
  int64_t axis = 0;  // concat; negative counts from the end
  std::vector<std::string> combine_inputs;
  std::string output;

  // Chain tensors this step reads / writes, in manifest order.
  std::vector<std::string> consumed() const;
  std::vector<std::string> produced() const;
};

// Initial value of a chain state key (top-level "states"): a .npy file, or zeros of a shape and
// dtype. Keys without an entry start as the executor's zeros of the shard's state type.
struct ChainStateInit {
  std::string key;
  std::string npy;  // resolved path, or ""
  Shape shape;
  DType dtype = DType::kInvalid;
};

struct ChainCheckpoint {
  std::string tensor;  // chain tensor
  std::string golden;  // golden dump entry
  std::string kind;    // "hidden", "logits", ...
  std::optional<int64_t> layer;
};

struct ChainManifest {
  std::string path;     // the manifest file as given
  std::string dir;      // its directory (paths are relative to it)
  std::string name;
  std::string goldens;  // resolved golden dump path, or "" when the manifest names none
  std::vector<ChainInput> inputs;
  std::vector<ChainStep> steps;
  std::vector<ChainStateInit> states;
  std::vector<ChainCheckpoint> checkpoints;

  const ChainStep* find_step(std::string_view id) const;
  const ChainCheckpoint* find_checkpoint(std::string_view tensor) const;
  // The step that produces `tensor`, or nullptr for chain inputs and unknown names.
  const ChainStep* producer(std::string_view tensor) const;
};

// Parses and validates a chain manifest. `path` is used for messages and to resolve relative
// paths. Checks: schema, unknown keys, unique step ids, every step either a shard step or a
// combine step ("sum" | "concat" with an integer axis), every consumed tensor produced by a
// chain input or an earlier step (a later producer is reported as a forward reference or
// cycle), every tensor produced once, residual_input naming an input, state keys used, and
// checkpoints naming produced tensors. With `check_files`, shard directories and .npy inputs
// must exist. Errors are kFormat (kIO for missing files) and read
// "chain.json: steps[3].inputs.hidden: tensor 'L0.attn_out' is not produced by any earlier step".
Result<ChainManifest> parse_chain_manifest(std::string_view json_text, const std::string& path,
                                           bool check_files = true);
Result<ChainManifest> load_chain_manifest(const std::string& path);

enum class ChainMode : uint8_t {
  kFreeRunning,    // every step reads what earlier steps produced
  kTeacherForced,  // residual-stream inputs are replaced by the goldens of the layer before
};
const char* chain_mode_name(ChainMode mode);  // "free-running" / "teacher-forced"

// What one step did (progress lines, reports).
struct ChainStepRecord {
  std::string id;
  bool is_combine = false;
  double seconds = 0;
  RunStats stats;  // shard steps only
  std::string shard_fingerprint;  // Shard::fingerprint(), when ChainRunOptions::fingerprints is set
  // Teacher-forced replacements: shard input -> golden entry fed in its place.
  std::vector<std::pair<std::string, std::string>> teacher_forced;
};

struct ChainNonFinite {
  std::string step;
  NonFinite where;
};

struct ChainRunOptions {
  ChainMode mode = ChainMode::kFreeRunning;
  Precision precision = Precision::kFp16;
  int threads = 1;
  // Chain tensors to keep besides the checkpoints (e.g. everything `record` writes).
  std::vector<std::string> keep;
  // Required for "golden:" inputs and for teacher-forced mode.
  const GoldenSource* goldens = nullptr;
  // When set, the fingerprint of every shard step's shard (Shard::fingerprint(), read once per
  // shard path and cached here across runs) goes into its ChainStepRecord.
  std::map<std::string, std::string>* fingerprints = nullptr;
  // Called after every step (progress output); may be empty.
  std::function<void(const ChainStepRecord&)> on_step;
  // Teacher-forced only: run just these steps (a CI slice, whole teacher_forced_groups()),
  // all when unset. Inputs replaced by goldens are not read from the chain, so a step runs
  // without the steps whose output teacher forcing replaces.
  std::optional<std::set<std::string>> only_steps;
  // Per shard step, compile-time values replaced in memory (RunOptions::weight_overrides), keyed
  // by the step's resolved shard path (ChainStep::shard). Not owned; may be null.
  const std::map<std::string, std::map<std::string, Tensor>>* weight_overrides = nullptr;
  // While a shard step runs, two helper threads open the next two shard steps' shards,
  // fingerprint them when `fingerprints` needs it, map their weight files and fault their pages
  // in, and then unmap the finished step's shard (golden/shard_prefetch.h): the
  // compute thread neither waits for the disk nor parses, hashes, faults or unmaps. Never
  // changes results or errors: an early open's result (or error) is handed over only when the
  // chain reaches that step. (The shards held ahead keep their inline literals, which count in
  // the memory budget's live bytes.) Off when false or when the environment holds
  // SG_PREFETCH=0.
  bool prefetch = true;
};

struct ChainRunResult {
  std::map<std::string, Tensor> tensors;  // checkpoints and `keep` tensors by chain name
  std::map<std::string, Tensor> inputs;   // the chain inputs as fed (for record)
  std::vector<ChainStepRecord> steps;
  std::optional<ChainNonFinite> first_nonfinite;  // first op of any step producing NaN/Inf
  uint64_t peak_chain_bytes = 0;  // peak bytes of chain tensors alive between steps
  uint64_t peak_step_bytes = 0;   // largest executor peak of one step
  // Chain tensors a device would not reproduce, each with why: made by a shard output that
  // depends on a random_* op (nonreproducible_values(), ops.h), or computed downstream from such
  // a tensor (a step input wired to it, a sum or concat of it). A teacher-forced input fed from
  // the goldens breaks the dependency. Checks on these tensors are excluded from the gate.
  std::map<std::string, std::string> nonreproducible;
  // Shard paths the helpers were asked to open, in order: every shard step that runs after the
  // first, each asked for while one of the two steps before it ran.
  std::vector<std::string> prefetched;
};

// Runs every step in order. Errors name the manifest and the step:
// "chain.json: steps[4] 'L0.combine': sum: shape [1, 8, 64] of 'L0.moe_p0' differs from ...".
// Teacher-forced mode: the residual-stream input of every shard step of layer N is the golden
// of layer N−1 — see residual_golden_for() for which input and which golden.
Result<ChainRunResult> run_chain(const ChainManifest& chain, const ChainRunOptions& options);

// Preflight: before anything runs, opens every shard's program (not its weights) and checks
// the wiring against the manifest and the goldens: functions, input and output port names,
// every shard input wired, state names, dtype classes and shapes along the chain (golden
// inputs, declared shard outputs, sum and concat), teacher-forced goldens, and checkpoint
// shapes against their goldens. Every problem is reported at once (kFormat, one line each:
// "chain.json: preflight found 2 problems (nothing was run):\n  - steps[4] 'L0.attn': ...").
Status preflight_chain(const ChainManifest& chain, const GoldenSource* goldens, bool teacher_forced);

// Teacher-forced replacements of one shard step: shard input -> golden entry name. An input is
// replaced when it is the step's `residual_input` (by the golden of layer N−1: the hidden
// checkpoint of that layer, else the dump's hidden entry of that layer) or when it reads a
// hidden checkpoint of an earlier layer than the step's (steps without a layer, such as an LM
// head, take the golden of any hidden checkpoint they read). Fails when a residual input has
// no golden to take.
Result<std::vector<std::pair<std::string, std::string>>> teacher_forced_inputs(
    const ChainManifest& chain, const ChainStep& step, const GoldenSource& goldens);

// Elementwise sum of same-shape float tensors (fp16 result rounded after every add in fp16
// precision, like a chain of MIL add ops; fp32 otherwise).
Result<Tensor> combine_sum(const std::vector<Tensor>& inputs, Precision precision);
// Concatenation along `axis` (negative from the end): equal ranks, equal dims off the axis,
// one dtype (fp16 and fp32 mixed give fp32).
Result<Tensor> combine_concat(const std::vector<Tensor>& inputs, int64_t axis);

// Runs the chain in each of `modes` and compares every checkpoint with its golden through the
// shared comparison engine (compare_tensors): one check per checkpoint and mode, rows along the
// golden entry's position axis. Identities: checkpoint = golden name, kind and layer from the
// manifest, shard = the id of the producing step; teacher-forced checks carry the label
// {"mode", "teacher-forced"}, free-running ones {"mode", "free-running"} when both modes run.
// Notes record the whole-tensor cosine of every hidden checkpoint, teacher-forced
// replacements, the first non-finite op and peak memory.
struct ChainFidelityOptions {
  std::vector<ChainMode> modes = {ChainMode::kFreeRunning};
  // Teacher-forced only (kUsage otherwise when count > 1): the slice of teacher_forced_groups()
  // this job runs; recorded in FidelityRun::slice for every teacher-forced-only run.
  int64_t slice_index = 0;
  int64_t slice_count = 1;
  Precision precision = Precision::kFp16;
  int threads = 1;
  MetricOptions metrics;
  std::function<void(ChainMode, const ChainStepRecord&)> on_step;
  // Passed to every run (ChainRunOptions::weight_overrides).
  const std::map<std::string, std::map<std::string, Tensor>>* weight_overrides = nullptr;
  bool prefetch = true;  // ChainRunOptions::prefetch
};
// The chain's steps cut into teacher-forced groups (see RunSlice, fidelity.h): a cut between
// steps i and i+1 is allowed unless a step after it reads, from a step before it, a chain tensor
// that teacher forcing does not replace by a golden, or a chain state key is used on both sides.
// Groups are contiguous and in manifest order; every step is in exactly one.
Result<std::vector<SliceGroup>> teacher_forced_groups(const ChainManifest& chain,
                                                      const GoldenSource& goldens);

// Whether CI slice `index` of `count` runs the group: group k goes to slice k % count (the
// one rule run_chain_fidelity applies and a job's progress counts by).
inline bool slice_runs_group(const SliceGroup& group, int64_t index, int64_t count) {
  return group.index % count == index;
}

Result<FidelityRun> run_chain_fidelity(const ChainManifest& chain, const GoldenSource& goldens,
                                       const ChainFidelityOptions& options);

}  // namespace sg
