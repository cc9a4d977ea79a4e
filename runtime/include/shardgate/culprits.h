// Culprit op search: where the error of a quantized shard enters, op by op, without
// recompiling anything. The candidate and its FP16 baseline are aligned op by op, both run on
// the same inputs with every op output captured, and each aligned output is compared. A
// *source op* is one whose output fails while every runtime input it reads passes (the
// definition coremltools' op-by-op comparator uses): the error enters there. Ops are also
// ranked by the error they add (their output's error minus their worst input's), which names
// where drift accumulates even when no single op fails. Definitions: runtime/diagnose/README.md.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sg {

struct CulpritOptions {
  std::string function = "main";
  std::map<std::string, Tensor> inputs;  // function inputs, the same for both shards
  Precision precision = Precision::kFp16;
  int threads = 1;
  double min_cosine = 0.97;  // an op output below this fails
};

struct OpComparison {
  int64_t op_index = 0;     // statement index in the candidate's function
  std::string op_type;
  // The candidate's output this row shows: every output of the op is compared with the
  // baseline op's output at the same position, and the row is its worst (a failing one first).
  std::string output;
  std::string baseline_output;
  std::string matched_by;   // "name" or "structure" (k-th runtime op of this type)
  std::string dtype;        // of the output
  Shape shape;
  // Float outputs: cosine, norm ratio, relative L2 and SNR of the whole output (a per-position
  // minimum would change under reshapes, which move positions between rows). Integer / bool outputs: the share of
  // equal elements in `cosine` (1 = identical), others NaN.
  double cosine = 1;
  double norm_ratio = 1;
  double rel_l2 = 0;
  double snr_db = 0;
  double input_cosine = 1;  // worst cosine over the runtime values it reads (1: inputs only)
  double added_error = 0;   // (1 - cosine) - (1 - input_cosine)
  // cosine < min_cosine (integers: any element differs); a NaN or Inf where the baseline's
  // element is not the same value fails too (cosine NaN): the op produced it (fp16 overflow).
  bool fails = false;
  bool source = false;      // fails while every runtime input passes
  std::vector<std::string> compressed_weights;  // constexpr-decoded weights it reads
};

struct CulpritResult {
  std::string candidate, baseline;  // paths
  std::string candidate_fingerprint, baseline_fingerprint;
  std::string function;
  double min_cosine = 0.97;
  std::vector<OpComparison> ops;        // aligned runtime ops in the candidate's order
  std::vector<std::string> unmatched;   // candidate ops with no baseline counterpart
  std::vector<std::string> notes;
  // Source ops, in program order.
  std::vector<const OpComparison*> sources() const;
  // The ops adding the most error (added_error > 1e-9), largest first, at most `n`.
  std::vector<const OpComparison*> top_added(size_t n) const;
};

Result<CulpritResult> find_culprits(const std::shared_ptr<const Shard>& candidate,
                                    const std::shared_ptr<const Shard>& baseline,
                                    const CulpritOptions& options);

}  // namespace sg
