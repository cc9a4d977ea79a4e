// The predicates behind rules.def: one `pred_<name>` per rule condition. Each looks only at the
// op, value types and small inline constants; none reads weight data.
#pragma once

#include "placement/graph_index.h"
#include "shardgate/placement.h"

#include <cstdint>
#include <string>

namespace sg::placement {

// Facts about one function, computed once before its ops are evaluated.
struct GraphFacts {
  bool fp32_function = false;     // G1: no fp16 runtime value, some fp32 one
  std::string range_input;        // G3: first input with range-shaped dims, "" when none
  uint64_t weight_bytes = 0;      // G6
  uint64_t matrix_macs = 0;       // G5: multiply-accumulates of conv / matmul / attention ops
  // G5b: conv / matmul / attention ops whose work cannot be computed from their value types
  // (a dynamic or unknown dim); matrix_macs leaves them out, so it is only a lower bound.
  int64_t matrix_ops_unknown_size = 0;
};

struct RuleContext {
  const Op& op;
  std::string_view type;  // op.type without an opset prefix
  const GraphIndex& index;
  const GraphFacts& facts;
  const PredictOptions& options;
  // The cond / while_loop whose nested block holds the op (innermost), nullptr at top level.
  const Op* enclosing_control_flow = nullptr;
};

using RulePredicate = bool (*)(const RuleContext&, std::string& detail);

#define SG_RULE(id, level, predicate, placement, confidence, source, reason) \
  bool pred_##predicate(const RuleContext& ctx, std::string& detail);
#include "placement/rules.def"
#undef SG_RULE

// G1 and G3 facts for one function.
GraphFacts compute_graph_facts(const Function& function, const GraphIndex& index,
                               const ModelFacts& model, uint64_t weight_bytes);
// Bytes of every blob-backed const / constexpr parameter in the program, from value types.
uint64_t blob_weight_bytes(const Program& program);
// Multiply-accumulates of one conv / linear / matmul / einsum / attention op from value types
// (0 for other ops or unknown shapes); saturates.
uint64_t op_matrix_macs(const GraphIndex& index, const Op& op);
// Bytes a tensor type occupies (0 when not a tensor or any dim is unknown); saturates.
uint64_t tensor_type_bytes(const ValueType& type);

// One compression op reachable from an op's inputs through compile-time producers.
struct CompressionSource {
  enum class Kind : uint8_t { kLut, kAffine, kBlockwisePerBlock, kBlockwisePerChannel, kSparse, kOther };
  Kind kind = Kind::kOther;
  const Op* op = nullptr;
  std::string value;        // the constexpr output name
  std::string granularity;  // e.g. "block 32 on axis 1", "per-channel on axis 0"
};
std::vector<CompressionSource> compression_sources(const GraphIndex& index, const Op& op);

}  // namespace sg::placement
