// ANE placement: the rule table that predicts where each op of an ML program runs, the import
// of compute-plan dumps captured on a Mac, residency counts, shard contract checks and the
// residency gate (runtime/placement/README.md).
//
// Placement only reads the program and value types: it never maps or reads weight data, so
// listing many large shards stays cheap.
#pragma once

#include "shardgate/ops.h"
#include "shardgate/program.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

// ---------------------------------------------------------------------------------------------
// Placement classes and the rule table

// Where an op runs (plan) or is predicted to run under CPU_AND_NE (rule table).
enum class Placement : uint8_t {
  kANE,        // on the Neural Engine
  kANERisk,    // eligible, but size/shape/device dependent (counts as ANE for the plain gate)
  kCPU,        // CPU fallback
  kGPU,        // GPU (only from a plan)
  kGPUOrCPU,   // off the ANE; GPU under ALL, CPU under CPU_AND_NE
  kNoDevice,   // compile-time weight materialisation: const, constexpr_*
  kUnknown,    // no rule or no device in a plan: never counted as ANE
};
const char* placement_name(Placement p);  // "ANE", "ANE_RISK", "CPU", "GPU", "GPU_OR_CPU", ...
bool placement_on_ane(Placement p);       // ANE or ANE_RISK
bool placement_is_fallback(Placement p);  // CPU, GPU or GPU_OR_CPU

// Confidence of a rule (runtime/placement/README.md, Where placement facts come from).
enum class Confidence : uint8_t { kApple, kAppleCoreAI, kUser, kFolklore };
const char* confidence_name(Confidence c);  // "A", "A*", "U", "F"

// kGraph and kOp rules decide a placement (first match wins); kOverlay rules come after and
// may only raise an op the others put on the ANE to ANE_RISK, never replace an off-ANE verdict.
enum class RuleLevel : uint8_t { kGraph, kOp, kOverlay };

// One row of runtime/placement/rules.def, without its predicate.
struct RuleInfo {
  std::string_view id;  // "G2a", "R22", "DEFAULT"
  RuleLevel level;
  Placement placement;
  Confidence confidence;
  std::string_view source;
  std::string_view reason;
};
// Every rule in evaluation order (graph-level first; the first match wins).
std::span<const RuleInfo> all_rules();
const RuleInfo* find_rule(std::string_view id);

// runtime/placement/op_kinds.def: every op of the MIL registry with the placement kind the op
// rules test ("kElementwise", ...) and, for kind "kUnknown", why no source places it.
struct PlacementOpKind {
  std::string_view op;
  std::string_view kind;
  std::string_view why;
};
std::span<const PlacementOpKind> placement_op_kinds();

// Thresholds the predicate functions use.
struct PredictOptions {
  uint64_t max_weight_bytes = uint64_t{1} << 30;  // G6: compiled weights per shard (iOS: 1 GB)
  int64_t max_rank = 5;                           // G10
  int64_t max_dim = 16384;                        // G11
  int64_t max_lookup_rows = 32768;                // R11a: inner-product lookup row bound
  uint64_t min_graph_macs = uint64_t{1} << 27;    // G5: 512^3, the smallest matmul seen on the NE
  int64_t min_sdpa_elements = int64_t{1} << 21;   // R3a: Q/K/V elements below which SDPA ran on CPU
  int64_t max_pool_kernel = 13;                   // R8: pooling kernel bound (NeuralNetwork era)
  int64_t max_pool_stride = 2;                    // R8a
  int64_t state_last_dim_multiple = 32;           // R25a: 64 bytes of fp16
  // R25b: the largest slice_update seen working on the NE (#2553: 16 heads x SEQ 32 x 128).
  uint64_t max_state_update_elements = uint64_t{1} << 16;
};

// What the predictor knows about a shard besides its program.
struct ModelFacts {
  const ModelInfo* info = nullptr;       // I/O description; may be null
  std::optional<uint64_t> weight_bytes;  // weight file bytes; summed from blob consts if unset
};

// ---------------------------------------------------------------------------------------------
// Per-op rows and residency

enum class PlacementSource : uint8_t { kPredicted, kPlan };
const char* placement_source_name(PlacementSource s);  // "predicted" / "plan"

struct OpPlacement {
  // Identity (placement README): function -> block path -> first output name.
  std::string function;
  std::vector<int64_t> block_path;  // {-1} for a function's top block, then nested block indices
  int64_t index = 0;                // statement index within its block
  int64_t line = 0;                 // model.mil line, 0 when read from protobuf
  std::string type;                 // normalised op type ("conv", not "ios17.conv")
  std::vector<std::string> outputs;
  std::string dtype;  // of the first output ("fp16"), "" when not a tensor
  Shape shape;        // of the first output
  bool shape_known = true;
  OpClass op_class = OpClass::kCompute;

  Placement placement = Placement::kUnknown;  // effective placement (plan when imported)
  PlacementSource source = PlacementSource::kPredicted;
  std::string preferred;               // plan: "ane"/"cpu"/"gpu"; predicted: placement name
  std::vector<std::string> supported;  // plan: as dumped; predicted: implied by the rule
  std::optional<double> cost;          // plan only

  Placement predicted = Placement::kUnknown;  // what the rule table says, kept under a plan
  std::string rule_id;
  std::string reason;
  std::string detail;  // the specific cause, e.g. which weight is per-block quantized
  // An overlay rule (G5, G6) that raised this op from ANE to ANE_RISK; "" when none.
  std::string overlay_rule;
  std::string overlay_detail;
  // A cast of an fp32 model input or output (G2a): counted apart from the body.
  bool boundary_cast = false;
};

// Model-level verdict of one shard: pass (every body compute op on the ANE, none at risk),
// at risk (on the ANE but some op at risk, or a boundary cast not plainly on the ANE), fail
// (an op off the ANE or of unknown placement, a shard-level limit broken, or nothing to check).
enum class ModelVerdict : uint8_t { kPass, kAtRisk, kFail };
const char* model_verdict_name(ModelVerdict v);  // "pass", "at risk", "fail"

// "main/-1/3" style printable identity.
std::string block_path_str(const std::vector<int64_t>& path);

struct ResidencySummary {
  int64_t total_ops = 0;
  int64_t compile_time_ops = 0;
  int64_t compute_ops = 0;
  int64_t on_ane = 0;     // ANE + ANE_RISK compute ops (boundary casts included)
  int64_t at_risk = 0;    // ANE_RISK compute ops (boundary casts included)
  int64_t fallbacks = 0;  // CPU / GPU / GPU_OR_CPU compute ops (boundary casts included)
  int64_t unknown = 0;    // UNKNOWN compute ops (no rule, or no device in a plan)
  // Residency is over the BODY (compute ops other than boundary casts), so fp32 I/O casts do
  // not drown the verdict on the body (issue 8 item 2):
  // 100 * (body_ane + body_at_risk) / body_ops; nullopt when there is no body op.
  std::optional<double> residency_pct;
  // With plan costs: 100 * cost of ANE body ops / cost of body ops with a cost.
  std::optional<double> cost_weighted_pct;
  int64_t costed_ops = 0;  // body ops with a cost
  // The body (compute ops other than boundary casts) and the boundary casts, counted apart.
  int64_t body_ops = 0;
  int64_t body_ane = 0;      // plainly on the ANE
  int64_t body_at_risk = 0;  // ANE_RISK
  int64_t body_off_ane = 0;  // CPU / GPU / unknown
  int64_t boundary_casts = 0;
  int64_t boundary_casts_not_ane = 0;  // at risk or off the ANE
  // The residency band over the body: 100 * body_ane / body_ops .. residency_pct.
  std::optional<double> residency_low_pct;
};
ResidencySummary summarize_residency(const std::vector<OpPlacement>& ops);

// Every op of every function (nested blocks included), in program order, with its predicted
// placement. Fails only on a malformed program (an op without outputs).
Result<std::vector<OpPlacement>> predict_placement(const Program& program, const ModelFacts& facts,
                                                   const PredictOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Compute-plan dumps (runtime/placement/README.md, Compute-plan dumps)

struct PlanOp {
  std::string function;
  std::vector<int64_t> block_path;
  std::string output;    // first output name: the join key
  std::string operator_type;  // normalised; "" in Apple's ModelRunner form (no type there)
  int64_t seq = -1;
  std::optional<std::string> preferred;                // "ane" / "cpu" / "gpu"; null = no usage
  std::optional<std::vector<std::string>> supported;
  std::optional<double> cost;
};

struct ComputePlanDump {
  enum class Form : uint8_t { kShardgate, kModelRunner };
  Form form = Form::kShardgate;
  std::string filename;
  std::string sha256;         // of the dump file's bytes: the evidence, named in every report
  std::string producer;       // free text from "producer" (tool, api, note)
  std::string host;           // free text from "host"
  std::string producer_note;  // producer.note: a synthetic dump (tests/mac's fake) says so here
  std::string compute_units;  // "CPU_AND_NE", ... ("" when absent)
  std::string model_name;
  std::optional<std::string> sha256_model_mil;  // schema 1 only: the compiled model.mil
  // Schema 2: the builds the dump was captured for. A dump made from an .mlpackage records the
  // package and the .mlmodelc compiled from it (either form of the shard is validated with it);
  // one made from an .mlmodelc records only that.
  struct BuildIdentity {
    std::string name;         // directory name: "L0_attn.mlpackage", "L0_attn.mlmodelc"
    std::string fingerprint;  // Shard::fingerprint() of that directory
    std::vector<Shard::FingerprintFile> files;  // what the fingerprint covered
  };
  int schema_version = 0;  // 1 or 2 for our form, 0 for Apple's ModelRunner form
  std::optional<BuildIdentity> package;
  std::optional<BuildIdentity> compiled;
  std::vector<std::string> functions;  // function names the dump lists, in order
  std::vector<PlanOp> ops;
  // model.op_mapping.compiled_only of a package dump: ops of the compiled program Core ML runs
  // that no package op maps onto ("main/-1/x (cast)"). The dump lists package ops only, so these
  // have no row; check_program fails the shard rather than pass it without them.
  std::vector<std::string> compiled_only;
  // What the Mac's logs recorded while the plan was taken (placement.md 1.9): an ANE compile
  // failure, or an Espresso "Unsupported op" line, means Core ML ran that work off the NE
  // whatever the per-op devices say, so check_program turns each into a shard-level failure.
  std::vector<std::string> ane_compile_errors;
  std::vector<std::string> espresso_unsupported;  // "op 42 (slice_update): reason"
};

// Parses and structurally validates a dump (both forms); messages name the file and the JSON
// path ("plan.json: functions[0].ops[3].preferred: expected one of ane, cpu, gpu or null").
Result<ComputePlanDump> parse_compute_plan(std::string_view json, const std::string& filename);
Result<ComputePlanDump> load_compute_plan(const std::string& path);

// Pairing a dump with a shard (ane-validator --plan / --plan-dir): the fingerprints a schema-2
// dump records (package, compiled), and whether its recorded names (package, compiled,
// model.name) name the shard directory, compared without the .mlpackage / .mlmodelc suffix.
bool plan_records_fingerprint(const ComputePlanDump& plan, const std::string& fingerprint);
bool plan_names_shard(const ComputePlanDump& plan, const std::string& shard_path);

// What a dump was matched against, for the reports: a schema-2 dump vouches for the program and
// every weight file (the fingerprint); a schema-1 dump for the compiled model.mil's text only
// (a weight changed since the dump goes unseen); Apple's form records no build at all.
std::string plan_match_basis(const ComputePlanDump& plan);

// Where the dump says it was taken, for the reports: "CPU_AND_NE on os=macOS 15.1, chip=...",
// plus the producer's note ("FAKE runtime ...": no Mac ran it). What a plan measured is only
// as good as the machine and configuration it was measured on, so the verdict names them.
std::string plan_provenance(const ComputePlanDump& plan);

// Refuses (kFormat) a schema-1 dump given an .mlpackage (it records only the compiled
// model.mil's sha256, which a package's protobuf program cannot be checked against on Linux)
// and a schema-2 dump captured for another build than `shard`: its fingerprint is
// neither the recorded package's nor the recorded compiled model's. The message names both
// fingerprints, the dump's record for the shard's form and the files that differ (added,
// missing, other size or content). Apple's form carries no identity, and a schema-1 dump given
// the .mlmodelc is ok here (apply_compute_plan checks its model.mil hash).
Status verify_plan_identity(const ComputePlanDump& plan, const Shard& shard);

// Overrides predicted rows with a dump. Refuses (kFormat) a schema-1 dump whose hash differs
// from `program_sha256` or a dump whose op identities / operator types do not match the rows.
// A compute op with no device becomes UNKNOWN and is listed in the returned failures; so is
// every compute op of a function the dump does not cover at all (one failure per function).
Result<std::vector<std::string>> apply_compute_plan(std::vector<OpPlacement>& ops,
                                                     const ComputePlanDump& plan,
                                                     const std::string& program_sha256);

// ---------------------------------------------------------------------------------------------
// Contract checks (--check NAME[=VALUE])

struct ContractCheck {
  enum class Kind : uint8_t { kCompression, kWeightBudget, kFp16Io, kDims };
  Kind kind = Kind::kCompression;
  uint64_t bytes = 0;  // compression: min weight bytes; weight-budget: max total bytes
  std::string spec;    // as given on the command line
};
// "compression=1048576", "weight-budget=200MB" (KB/MB/GB = 1000^n, KiB/MiB/GiB = 1024^n),
// "fp16-io", "dims".
Result<ContractCheck> parse_contract_check(std::string_view spec);

struct ContractCheckResult {
  std::string name;  // "compression", "weight-budget", "fp16-io", "dims"
  std::string spec;
  bool passed = false;
  std::string detail;                  // one line: what was measured against what
  std::vector<std::string> offenders;  // names (weights, inputs, values) that break the contract
};
std::vector<ContractCheckResult> run_contract_checks(const Program& program,
                                                     const ModelFacts& facts,
                                                     const std::vector<ContractCheck>& checks,
                                                     const PredictOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Residency gate (gates/residency.json)

struct ResidencyThreshold {
  double min_residency_pct = 100.0;
  std::string origin;  // "built-in default", "gates/residency.json: default", "... override 'x'"
  std::string reason;  // the override's written reason, "" for defaults
};

// gates/residency.json: {"schema": kResidencyGateSchema, "description", "defaults":
// {"min_residency_pct": {"value", "reason"}}, "overrides": [{"match": {"shard": GLOB},
// "min_residency_pct", "reason"}]}, the conventions of gates/fidelity.json. The first form
// ({"schema_version": 1, "gate": "residency", "default", "overrides": [{"shard", ...}]}) is
// still read.
inline constexpr const char* kResidencyGateSchema = "shardgate/residency-gate@1";

struct ResidencyPolicy {
  struct Override {
    // Glob on the shard's file name ("layer_00*.mlmodelc"): '*' and '?', as sg::glob_match
    // (the shard globs of gates/fidelity.json); with '/' in it, on as many trailing components
    // of the path ("07/model.mlpackage").
    std::string shard;
    double min_residency_pct = 100.0;
    std::string reason;
  };
  std::string filename;  // "" for the built-in default
  double default_min_residency_pct = 100.0;
  std::string default_reason;  // optional for the default
  std::vector<Override> overrides;

  // The first override whose pattern matches the shard's file name, else the default.
  ResidencyThreshold threshold_for(const std::string& shard_path) const;
};
Result<ResidencyPolicy> parse_residency_policy(std::string_view json, const std::string& filename);
Result<ResidencyPolicy> load_residency_policy(const std::string& path);

struct GateVerdict {
  bool passed = false;
  std::vector<std::string> failures;  // one line each, naming rules and ops
};
// Fails when residency < threshold, when nothing was measured (no compute op), when a plan
// left a compute op without device, when a contract check failed, and under `strict` when an
// op is at risk or unknown.
GateVerdict evaluate_residency_gate(const std::vector<OpPlacement>& ops,
                                    const ResidencySummary& summary,
                                    const std::vector<std::string>& plan_failures,
                                    const std::vector<ContractCheckResult>& checks,
                                    const ResidencyThreshold& threshold, bool strict);

// ---------------------------------------------------------------------------------------------
// One shard end to end (what ane-validator runs per shard)

struct ShardCheckOptions {
  std::string plan_path;  // "" = predict
  // The dump at plan_path when the caller has parsed it already (ane-validator matches dumps
  // to shards by model.name); null = load plan_path. One dump may serve several shards.
  std::shared_ptr<const ComputePlanDump> plan;
  // The shard at `path` when the caller has opened it already (ane-validator opens it to pair a
  // dump by fingerprint): check_shard then neither parses the program nor hashes the weights a
  // second time. null = open `path`.
  std::shared_ptr<const Shard> shard;
  std::vector<ContractCheck> checks;
  ResidencyThreshold threshold;
  bool strict = false;
  PredictOptions predict;
  // Compute the shard's fingerprint (Shard::fingerprint(): reads every weight byte once, unless
  // the shard was fingerprinted already to pair a dump) into ShardCheck::fingerprint.
  bool fingerprint = false;
};

struct ShardCheck {
  std::string path;
  std::string form;  // "mlmodelc" / "mlpackage"; "" when the shard did not open
  std::string program_sha256;
  std::string fingerprint;  // Shard::fingerprint(); "" when not asked for or not opened
  std::optional<Status> error;  // bad input (shard or plan): the run exits 2
  std::vector<OpPlacement> ops;
  ResidencySummary summary;
  PlacementSource source = PlacementSource::kPredicted;
  std::string plan_path;
  std::string plan_sha256;      // of the dump file; "" when predicted (or a report without it)
  std::string plan_matched_by;  // plan_match_basis() of the dump; "" when predicted
  std::string plan_taken_on;    // plan_provenance() of the dump; "" when predicted
  std::vector<std::string> plan_failures;
  std::vector<ContractCheckResult> checks;
  ResidencyThreshold threshold;
  bool strict = false;
  // Shard-level limits broken (weights over the per-shard limit): each fails the gate.
  std::vector<std::string> shard_failures;
  ModelVerdict model_verdict = ModelVerdict::kFail;
  GateVerdict verdict;
};
// The model-level verdict from a summary and whether a shard-level limit was broken.
ModelVerdict model_verdict_of(const ResidencySummary& summary, bool shard_failed);
// Opens the shard, checks every weight reference against its blob metadata record (only those
// 64-byte records are read, never weight data), predicts, imports the plan, runs the checks and
// the gate. Input errors (shard, weights, plan) are recorded in `error`, never thrown.
ShardCheck check_shard(const std::string& path, const ShardCheckOptions& options);
// The same on a program already in memory (tests; `path` is used for names only).
ShardCheck check_program(const std::string& path, const Program& program, const ModelFacts& facts,
                         const std::string& program_sha256, const ShardCheckOptions& options);

}  // namespace sg
