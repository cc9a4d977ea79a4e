// Weight diagnostics: how well each compressed weight of a shard keeps its information, read
// statically from the codes (nothing is executed). For every compile-time weight a runtime op
// consumes through a constexpr_* op: the form (bits, group grid), the bits its codes actually
// carry (entropy of the code histogram), the share of codes used, the outlier ratio
// (max |w| / rms within a scale group), the quantization step against the weights it serves,
// and, when the FP16 baseline shard is given, the measured relative error and SQNR of the
// decoded weight against the baseline's. Flags (weight_flags.def) name the known causes of
// failing fidelity, such as one per-tensor scale set by a few outliers.
// Definitions of every statistic: runtime/diagnose/README.md.
#pragma once

#include "shardgate/shard.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sg {

struct WeightFlag {
  std::string id;       // weight_flags.def row, e.g. "outlier_scale"
  std::string message;  // the facts that made it fire, in words
};

struct WeightDiagnostic {
  std::string function;
  std::string name;      // the compile-time value (output of the constexpr op)
  std::string op_type;   // the constexpr op that decodes it
  // Where it is used: "<consumer output>.<parameter>", e.g. "experts_gate.weight". The
  // baseline's weight with the same key in the same function is its reference.
  std::string key;
  std::string consumer_type;  // e.g. "linear"
  std::string form;      // e.g. "int8, 1 scale per tensor", "uint4 palette, 1 table per 32x64"
  Shape shape;
  int64_t elements = 0;
  int64_t groups = 0;          // scales / tables
  int64_t group_elements = 0;  // weights per scale / table
  int code_bits = 0;           // 0: no per-element codes (vector palettes, sparse forms)
  // NaN when not applicable (see runtime/diagnose/README.md).
  double effective_bits = 0;      // Shannon entropy of the codes, bits per weight
  double codes_used = 0;          // distinct codes used / 2^code_bits
  double outlier_ratio = 0;       // max over groups of max|w| / rms(w) within the group
  int64_t outlier_group = 0;      // the group where it is largest
  double tensor_outlier_ratio = 0;  // max|w| / rms(w) over the whole weight
  double rms = 0;                 // of the decoded weight
  double step_min = 0, step_median = 0, step_max = 0;  // linear forms: |scale| over groups
  double typical_codes = 0;       // linear forms: rms / step (how many steps a typical weight spans)
  double est_rel_error = 0;       // linear forms: rounding error estimate, step^2/12 per weight
  // Against the baseline (when given and paired).
  bool has_baseline = false;
  std::string baseline_name;  // the baseline's value, or why there is none
  double rel_error = 0;       // ||w - w_ref|| / ||w_ref||
  double sqnr_db = 0;         // 20 log10(||w_ref|| / ||w - w_ref||)
  std::vector<WeightFlag> flags;
};

struct WeightDiagnosticsResult {
  std::string shard;
  std::string fingerprint;
  std::string baseline;               // empty when none
  std::string baseline_fingerprint;
  std::vector<WeightDiagnostic> weights;
  int64_t flagged() const;
};

// The flags (runtime/diagnose/weight_flags.def) that fire on `w`'s statistics, with their
// messages. diagnose_weights() sets WeightDiagnostic::flags with it.
std::vector<WeightFlag> weight_flags_for(const WeightDiagnostic& w);

// A weight of `shard` (the value `name` of `function`) against one of `baseline`: both decoded,
// compared in chunks. rel_error = ||w - w_ref|| / ||w_ref||; NaN both when the shapes differ.
struct WeightError {
  Shape shape, baseline_shape;
  double rel_error = 0;
  double sqnr_db = 0;
};
Result<WeightError> weight_error(const Shard& shard, const Function& function,
                                 std::string_view name, const Shard& baseline,
                                 const Function& baseline_function, std::string_view baseline_name);

// Diagnoses every compressed weight of every function of `shard`; `baseline` (may be null) is
// the FP16 shard it was converted from. Reads each weight once; with a baseline, decodes the
// weight and its reference one at a time.
Result<WeightDiagnosticsResult> diagnose_weights(const Shard& shard, const Shard* baseline);

}  // namespace sg
