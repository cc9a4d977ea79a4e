// Walks every function and nested block of a program and predicts each op's placement with
// the rule table; summarises residency over the rows.
#include "placement/op_kinds.h"
#include "placement/rules.h"

#include <fmt/format.h>

namespace sg {
namespace {

using placement::GraphFacts;
using placement::GraphIndex;
using placement::RuleContext;

std::string preferred_for(Placement p) {
  switch (p) {
    case Placement::kANE:
    case Placement::kANERisk: return "ane";
    case Placement::kCPU:
    case Placement::kGPUOrCPU: return "cpu";  // under CPU_AND_NE, off-ANE work lands on the CPU
    case Placement::kGPU: return "gpu";
    case Placement::kNoDevice:
    case Placement::kUnknown: return "";
  }
  return "";
}

std::vector<std::string> supported_for(Placement p) {
  switch (p) {
    case Placement::kANE:
    case Placement::kANERisk: return {"cpu", "ane"};
    case Placement::kCPU: return {"cpu"};
    case Placement::kGPU: return {"gpu"};
    case Placement::kGPUOrCPU: return {"cpu", "gpu"};
    case Placement::kNoDevice:
    case Placement::kUnknown: return {};
  }
  return {};
}

struct Walker {
  const GraphIndex& index;
  const GraphFacts& facts;
  const PredictOptions& options;
  const std::string& function_name;
  std::vector<OpPlacement>& rows;

  // `control_flow`: the innermost cond / while_loop placed off the ANE whose body this is; its
  // ops inherit that placement (R15a).
  Status walk(const Block& block, std::vector<int64_t>& path, const Op* control_flow) {
    for (size_t i = 0; i < block.ops.size(); ++i) {
      const Op& op = block.ops[i];
      OpPlacement row;
      row.function = function_name;
      row.block_path = path;
      row.index = static_cast<int64_t>(i);
      row.line = op.line;
      row.type = normalize_op_type(op.type);
      for (const NamedType& out : op.outputs) row.outputs.push_back(out.name);
      // write_state has no output: it keeps its function/block/index identity but cannot be
      // joined with a compute plan, which names ops by their first output.
      static const ValueType kNoOutput{ValueType::Kind::kTuple};
      const ValueType& first = op.outputs.empty() ? kNoOutput : op.outputs[0].type;
      if (op.outputs.empty()) {
        row.dtype = "";
        row.shape_known = false;
      } else if (first.is_tensor()) {
        row.dtype = std::string(dtype_name(first.dtype));
        row.shape = first.shape;
        row.shape_known = first.rank_known;
      } else {
        row.dtype = first.to_string();
        row.shape_known = false;
      }
      row.op_class = classify_op(row.type);
      placement::RuleMatch match = placement::evaluate_rules(
          RuleContext{op, row.type, index, facts, options, control_flow});
      row.placement = match.rule->placement;
      row.rule_id = std::string(match.rule->id);
      row.reason = std::string(match.rule->reason);
      row.detail = std::move(match.detail);
      row.boundary_cast = row.rule_id == "G2a";
      if (match.overlay) {
        row.placement = match.overlay->placement;
        row.overlay_rule = std::string(match.overlay->id);
        row.overlay_detail = std::move(match.overlay_detail);
      }
      row.predicted = row.placement;
      row.preferred = preferred_for(row.placement);
      row.supported = supported_for(row.placement);
      const Op* inner = control_flow;
      if (!op.blocks.empty() && placement::op_kind(row.type) == placement::OpKind::kControlFlow &&
          !placement_on_ane(row.placement)) {
        inner = &op;
      }
      rows.push_back(std::move(row));
      for (size_t b = 0; b < op.blocks.size(); ++b) {
        SG_CHECK(path.size() < 64, ErrorCode::kFormat,
                 "function '{}': blocks nested more than 64 deep at op {} ({})", function_name, i,
                 op.type);
        path.push_back(static_cast<int64_t>(b));
        SG_TRY(walk(op.blocks[b], path, inner));
        path.pop_back();
      }
    }
    return Status::ok();
  }
};

}  // namespace

std::string block_path_str(const std::vector<int64_t>& path) {
  std::string s;
  for (size_t i = 0; i < path.size(); ++i) s += (i ? "." : "") + std::to_string(path[i]);
  return s.empty() ? "-1" : s;
}

Result<std::vector<OpPlacement>> predict_placement(const Program& program, const ModelFacts& facts,
                                                   const PredictOptions& options) {
  uint64_t weight_bytes =
      facts.weight_bytes ? *facts.weight_bytes : placement::blob_weight_bytes(program);
  std::vector<OpPlacement> rows;
  for (const Function& function : program.functions) {
    GraphIndex index(function);
    GraphFacts graph = placement::compute_graph_facts(function, index, facts, weight_bytes);
    Walker walker{index, graph, options, function.name, rows};
    std::vector<int64_t> path{-1};
    SG_TRY(walker.walk(function.block, path, nullptr));
  }
  return rows;
}

ResidencySummary summarize_residency(const std::vector<OpPlacement>& ops) {
  ResidencySummary s;
  double cost_all = 0;
  double cost_ane = 0;
  for (const OpPlacement& op : ops) {
    ++s.total_ops;
    if (op.op_class == OpClass::kCompileTime) {
      ++s.compile_time_ops;
      continue;
    }
    ++s.compute_ops;
    if (op.boundary_cast) {
      ++s.boundary_casts;
      if (op.placement != Placement::kANE) ++s.boundary_casts_not_ane;
    } else {
      ++s.body_ops;
      if (op.placement == Placement::kANE) ++s.body_ane;
      else if (op.placement == Placement::kANERisk) ++s.body_at_risk;
      else ++s.body_off_ane;
    }
    if (placement_on_ane(op.placement)) ++s.on_ane;
    if (op.placement == Placement::kANERisk) ++s.at_risk;
    if (placement_is_fallback(op.placement)) ++s.fallbacks;
    if (op.placement == Placement::kUnknown || op.placement == Placement::kNoDevice) ++s.unknown;
    // Residency is over the body: boundary casts are counted apart (placement.h).
    if (op.cost && !op.boundary_cast) {
      ++s.costed_ops;
      cost_all += *op.cost;
      if (placement_on_ane(op.placement)) cost_ane += *op.cost;
    }
  }
  if (s.body_ops > 0) {
    const auto body = static_cast<double>(s.body_ops);
    s.residency_pct = 100.0 * static_cast<double>(s.body_ane + s.body_at_risk) / body;
    s.residency_low_pct = 100.0 * static_cast<double>(s.body_ane) / body;
  }
  if (s.costed_ops > 0 && cost_all > 0) s.cost_weighted_pct = 100.0 * cost_ane / cost_all;
  return s;
}

ModelVerdict model_verdict_of(const ResidencySummary& s, bool shard_failed) {
  if (shard_failed || s.body_ops == 0 || s.body_off_ane > 0) return ModelVerdict::kFail;
  if (s.body_at_risk > 0 || s.boundary_casts_not_ane > 0) return ModelVerdict::kAtRisk;
  return ModelVerdict::kPass;
}

}  // namespace sg
