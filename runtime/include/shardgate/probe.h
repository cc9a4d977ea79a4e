// Probing one quantized shard against its FP16 baseline shard on seeded random inputs (the
// "5 seeds on p0of8" check), and the seeded inputs themselves (also used by `exec`).
//
// Seeded inputs, per function input, from the input's declared type:
//  - float: every element drawn from N(0, 1), then every vector along the last axis scaled to
//    unit L2 norm (a unit-norm hidden state per position, the scale a normalised residual
//    stream has). Draws come from std::mt19937_64 (its sequence is fixed by the C++ standard)
//    through a Box–Muller transform written here, seeded from the seed and the input's name,
//    so the same seed gives the same inputs on every platform and for every input order.
//  - integer: uniform over the valid range when the shard shows it (an index input of a
//    `gather` on a table of R rows along the gathered axis: [0, R)); otherwise zeros, with a
//    note asking for --input.
//  - inputs given explicitly are used as they are, for every seed.
// Flexible (unknown) dimensions cannot be drawn: such an input must be given.
#pragma once

#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

struct SeededInputs {
  std::map<std::string, Tensor> inputs;
  std::vector<std::string> notes;  // e.g. "int input 'start' set to 0: no valid range known"
};

// Inputs of `function` for `seed` (see above). States are not inputs: the executor starts them
// as zeros. kUsage when a flexible input is not given; kShape when a given input does not match
// the declared shape.
Result<SeededInputs> make_seeded_inputs(const Shard& shard, std::string_view function,
                                        uint64_t seed,
                                        const std::map<std::string, Tensor>& given = {});

struct ProbeOptions {
  std::string function = "main";
  int64_t seeds = 5;        // number of seeds
  uint64_t first_seed = 0;  // seeds first_seed .. first_seed + seeds - 1
  std::map<std::string, Tensor> given_inputs;
  Precision precision = Precision::kFp16;
  int threads = 1;
  MetricOptions metrics;
  // Added to every check's identity (e.g. {"shard", "L0_moe_p0"} when probing many shards).
  std::vector<std::pair<std::string, std::string>> labels;
};

// One check per function output: the candidate's outputs over all seeds against the baseline's,
// one row per seed (row i is seed first_seed + i), so a seed where both shards output all zeros
// (an MoE pack that got no token) is a degenerate row, excluded from the gate, and a check
// passes on the remaining seeds; when every seed is degenerate the check fails (no evidence).
// Outputs named "logits*" also get the logits metrics. The two shards must have the same
// function inputs (names, dtypes, shapes) and outputs.
struct ProbeResult {
  std::vector<CheckResult> checks;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, NonFinite>> first_nonfinite;  // ("baseline"/"candidate", op)
  std::string candidate_sha256;  // sha256 of each shard's program file (model.mil / .mlmodel)
  std::string baseline_sha256;
};

// Runs the baseline on every seed, releases it, then the candidate (one shard open at a time).
Result<ProbeResult> probe_shard(const std::string& candidate_path,
                                const std::string& baseline_path, const ProbeOptions& options);
// The same on shards already open (tests, programs built in memory).
Result<ProbeResult> probe_shards(const std::shared_ptr<const Shard>& candidate,
                                 const std::shared_ptr<const Shard>& baseline,
                                 const ProbeOptions& options);

}  // namespace sg
