// Probing one quantized shard against its FP16 baseline shard (the "5 seeds on p0of8" check),
// and the seeded inputs themselves (also used by `exec`).
//
// Inputs of a probe, per seed (rows of every check are seeds, never positions):
//  - realistic (`base_inputs`, --inputs-from): the golden input of the shard (what it receives
//    in its chain when every tensor it reads comes from the FP16 goldens; probe_inputs.h). Seed
//    `first_seed` is that input as it is; every later seed adds a seeded N(0,1) perturbation
//    scaled per last-axis vector to `perturbation` × that vector's RMS (float inputs only;
//    integer inputs such as token ids stay as they are).
//  - random (no base inputs), per function input, from the input's declared type:
//    float: every element drawn from N(0, 1), then every vector along the last axis scaled to
//    unit L2 norm (the historic default), or to RMS `input_rms` per element (--input-rms; real
//    hidden states of a 2048-wide model have RMS ~1, i.e. norm ~45, about 45× a unit vector),
//    then multiplied by `input_scale` (--input-scale). Draws come from std::mt19937_64 (its
//    sequence is fixed by the C++ standard) through a Box–Muller transform written here,
//    seeded from the seed and the input's name, so the same seed gives the same inputs on
//    every platform and for every input order. The result is cast to the declared dtype.
//    integer: uniform over the valid range when the shard shows it (an index input of a
//    `gather` on a table of R rows along the gathered axis: [0, R)); otherwise zeros, with a
//    note asking for --input.
//  - inputs given explicitly (`given_inputs`) are used as they are, for every seed.
// Flexible (unknown) dimensions cannot be drawn: such an input must be given.
//
// Input-stability check (`stability_rms` > 0): the baseline also runs on every seed's input
// plus and minus a tiny seeded perturbation (`stability_rms` × the RMS of each last-axis
// vector, float inputs only; both signs, so a tie within its reach is crossed whichever way the
// draw points). The lower cosine between the baseline's output on the input and on a twin is
// stored in every row (RowResult::stability_cosine). When it is below the gate's min_cosine for that check the
// baseline itself moves more than the gate allows on that input (a near-tied MoE router that a
// tiny change flips to other experts): the gate marks the row `unstable`, reports its margin and
// excludes it like a degenerate row, so it is never counted as quantization error; a check
// whose rows are all unstable or degenerate fails (no evidence).
#pragma once

#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

struct SeededInputs {
  std::map<std::string, Tensor> inputs;
  std::vector<std::string> notes;  // e.g. "int input 'start' set to 0: no valid range known"
};

// How random float inputs are scaled (see above): every last-axis vector to unit L2 norm, or to
// RMS `rms` per element when set; then multiplied by `scale`.
struct InputScale {
  std::optional<double> rms;
  double scale = 1.0;
  std::string describe() const;  // "unit-norm", "RMS 1", "unit-norm x 45", ...
};

// Inputs of `function` for `seed` (see above). States are not inputs: the executor starts them
// as zeros. kUsage when a flexible input is not given; kShape when a given input does not match
// the declared shape.
Result<SeededInputs> make_seeded_inputs(const Shard& shard, std::string_view function,
                                        uint64_t seed,
                                        const std::map<std::string, Tensor>& given = {},
                                        const InputScale& scale = {});

// `x` plus a seeded N(0,1) perturbation scaled per last-axis vector to `relative` × that vector's
// RMS (float tensors; anything else is returned unchanged). The result has x's dtype. `salt`
// separates independent streams (the seed's perturbation, the stability perturbation).
Result<Tensor> perturbed(const Tensor& x, double relative, uint64_t seed, std::string_view name,
                         uint64_t salt);

struct ProbeOptions {
  std::string function = "main";
  int64_t seeds = 5;        // number of seeds
  uint64_t first_seed = 0;  // seeds first_seed .. first_seed + seeds - 1
  std::map<std::string, Tensor> given_inputs;
  // Realistic inputs (--inputs-from): seed first_seed is this, later seeds add a perturbation
  // of relative RMS `perturbation`. Empty: random inputs scaled by `input_scale`.
  std::map<std::string, Tensor> base_inputs;
  std::string base_inputs_origin;  // for the notes, e.g. "goldens of chain.json step 'L0.attn'"
  double perturbation = 0.05;
  InputScale input_scale;
  // Relative RMS of the input-stability perturbation; 0 switches the check off.
  double stability_rms = 1e-2;
  // Kind of each output (residual stream "hidden", MoE pack "partial_sum", ...): part of the
  // check identity, so the gate may differ per kind. Outputs not named here: "logits" when the
  // name starts with "logits", else "output".
  std::map<std::string, std::string> output_kinds;
  // The position axis of each output (nullopt: the whole output is one vector per seed), from
  // --output-position-axis or the golden of the checkpoint a chain wires the output to. Outputs
  // not named here: axis 1 when the rank is >= 3 ([batch, position, ...]), a guess that a
  // channels-first output ([1, C, S], the ANE's [1, C, 1, S]) gets wrong: its rows would be
  // channels, each spanning every token, so one broken token hides among the healthy ones.
  std::map<std::string, std::optional<int64_t>> position_axes;
  // Partial sums judged in the residual frame: output -> the input carrying the residual
  // stream it is added to. Each adds a check "INPUT+OUTPUT" of kind "hidden" comparing
  // input + candidate output against input + baseline output (what the layer's sum sees).
  std::map<std::string, std::string> frames;
  std::optional<int64_t> layer;  // the layer of every check (from the chain), when known
  Precision precision = Precision::kFp16;
  int threads = 1;
  MetricOptions metrics;
  // Added to every check's identity (e.g. {"shard", "L0_moe_p0"} when probing many shards).
  std::vector<std::pair<std::string, std::string>> labels;
  // The candidate as every check's identity names it (CheckIdentity::shard): its file name
  // when empty; the CLI gives the path tail that tells it from the other candidates.
  std::string shard_id;
};

// One check per function output: the candidate's outputs over all seeds against the baseline's,
// one row per seed, or per seed and position for outputs laid out [batch, position, ...]
// (rank >= 3; RowResult::seed and ::position; CheckResult::row_axis is "seed"), so a row
// where both shards output all zeros (an MoE pack that got no token) is a degenerate row,
// excluded from the gate, and a check passes on the remaining seeds; when every seed is
// degenerate (or unstable) the check fails (no evidence). Outputs of kind "logits" also get the
// logits metrics. The two shards must have the same function inputs (names, dtypes, shapes)
// and outputs.
struct ProbeResult {
  std::vector<CheckResult> checks;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, NonFinite>> first_nonfinite;  // ("baseline"/"candidate", op)
  std::string candidate_sha256;  // sha256 of each shard's program file (model.mil / .mlmodel)
  std::string baseline_sha256;
  std::string candidate_fingerprint;  // Shard::fingerprint(): program and every weight file
  std::string baseline_fingerprint;
};

// Runs the baseline on every seed, releases it, then the candidate (one shard open at a time).
Result<ProbeResult> probe_shard(const std::string& candidate_path,
                                const std::string& baseline_path, const ProbeOptions& options);
// The same on shards already open (tests, programs built in memory).
Result<ProbeResult> probe_shards(const std::shared_ptr<const Shard>& candidate,
                                 const std::shared_ptr<const Shard>& baseline,
                                 const ProbeOptions& options);

}  // namespace sg

namespace sg {

class GoldenSource;
struct ChainManifest;

// Realistic probe inputs from a chain manifest and its goldens (--inputs-from CHAIN.json): the
// inputs the shard's step receives when every tensor it reads comes from the FP16 goldens.
//  - The step is the one whose shard is the candidate or its baseline (same file), so either
//    the quantized chain or the FP16 chain may be given.
//  - A step input is, in this order: its teacher-forced golden (teacher_forced_inputs(): the
//    residual input of layer N gets the golden of layer N−1, an LM head the last hidden
//    golden), the golden of a checkpoint of that tensor, a chain input ("golden:" or "npy:"),
//    or else the tensor computed from those by the steps that produce it, each run with its
//    FP16 baseline shard (`baseline_of`) in the given precision; combine steps as in a chain.
//    A pack of an MoE layer thus receives the FP16 attention output of its layer on the golden
//    of the layer before.
//  - Output kinds: an output that is a checkpoint gets the checkpoint's kind ("hidden",
//    "logits"); the output of a step without `residual_input` that a `sum` combine adds is a
//    "partial_sum" (an MoE pack's share of the residual stream), gated by its own policy
//    entry, and framed by the step's input of the same shape that the same sum also adds
//    (the residual stream the pack read): ProbeOptions::frames; anything else "logits" by
//    name or "output".
// Stateful steps (chain state) cannot be probed this way (kUnsupported).
struct ChainProbeInputs {
  std::string step_id;
  std::optional<int64_t> layer;
  std::map<std::string, Tensor> inputs;              // shard input -> tensor
  std::map<std::string, std::string> output_kinds;   // shard output -> kind
  std::map<std::string, std::optional<int64_t>> position_axes;  // checkpoint output -> its golden's axis
  std::map<std::string, std::string> frames;         // partial-sum output -> residual input
  std::vector<std::string> notes;                    // where each input came from
  std::vector<ReportShard> executed;                 // FP16 baselines run to make the inputs
};
// `cache`: the chain tensors computed so far, kept between calls for the steps of one chain
// (probing every MoE pack of a layer runs the layer's FP16 attention once, not once per pack).
// One cache per chain, goldens, baseline mapping and precision; null: nothing is kept.
struct ChainProbeCache {
  std::map<std::string, Tensor> tensors;                 // chain tensor -> value
  std::map<std::string, std::string> origins;            // chain tensor -> where it came from
  std::map<std::string, std::vector<ReportShard>> runs;  // chain tensor -> baselines run to make it
  int64_t baseline_runs = 0;                             // FP16 baseline steps actually executed
};
Result<ChainProbeInputs> chain_probe_inputs(
    const ChainManifest& chain, const GoldenSource& goldens, const std::string& candidate_path,
    const std::string& baseline_path,
    const std::function<Result<std::string>(const std::string&)>& baseline_of,
    Precision precision, int threads, ChainProbeCache* cache = nullptr);

}  // namespace sg
