// Conditions of the placement rules (rules.def). Each predicate answers one question about one
// op from value types and inline constants only; the order of evaluation lives in rules.def.
#include "placement/rule_predicates.h"

#include "ops/weight_formats.h"
#include "placement/op_kinds.h"
#include "shardgate/ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string_view>

namespace sg::placement {
namespace {

bool is_compute(const RuleContext& ctx) { return !ctx.op.is_compile_time(); }

bool type_in(std::string_view type, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), type) != names.end();
}

bool kind_is(const RuleContext& ctx, OpKind kind) { return op_kind(ctx.type) == kind; }

// A runtime tensor an op reads or writes, with the name a report can show.
struct BoundaryValue {
  std::string_view name;
  const ValueType* type;
};

// Runtime inputs (references to non-compile-time values) and outputs of the op.
std::vector<BoundaryValue> boundary_values(const RuleContext& ctx) {
  std::vector<BoundaryValue> values;
  for (const auto& [key, arg] : ctx.op.inputs) {
    for (const Binding& b : arg.bindings) {
      if (!b.is_reference() || ctx.index.is_compile_time_value(b.name)) continue;
      if (const ValueInfo* v = ctx.index.find(b.name)) values.push_back({b.name, v->type});
    }
  }
  for (const NamedType& out : ctx.op.outputs) values.push_back({out.name, &out.type});
  return values;
}

// A tensor type, looking through state<...> wrappers.
const ValueType* tensor_of(const ValueType* t) {
  while (t && t->kind == ValueType::Kind::kState && !t->members.empty()) t = &t->members[0];
  return t && t->is_tensor() ? t : nullptr;
}

bool is_int32_like(DType t) {
  return t == DType::kI32 || t == DType::kI64 || t == DType::kU32 || t == DType::kU64;
}

// Small integer constants written inline (an inline literal binding, or a reference to a const
// op whose value is inline). Blob-backed values are never read here.
std::optional<std::vector<int64_t>> inline_ints(const RuleContext& ctx, std::string_view name) {
  const Argument* arg = ctx.op.input(name);
  const Tensor* tensor = nullptr;
  if (arg && !arg->bindings.empty()) {
    const Binding& b = arg->bindings[0];
    if (!b.is_reference()) {
      if (!b.literal->is_blob()) tensor = &b.literal->tensor;
    } else if (const ValueInfo* v = ctx.index.find(b.name); v && v->producer &&
                                                            v->producer->is_const()) {
      const Value* val = v->producer->attribute("val");
      if (val && !val->is_blob()) tensor = &val->tensor;
    }
  } else if (const Value* attr = ctx.op.attribute(name); attr && !attr->is_blob()) {
    tensor = &attr->tensor;
  }
  if (!tensor || !tensor->defined() || !dtype_is_integer(tensor->dtype())) return std::nullopt;
  auto ints = to_int64_vector(*tensor);
  if (!ints.is_ok()) return std::nullopt;
  return std::move(ints).value();
}

bool is_runtime_reference(const RuleContext& ctx, std::string_view name) {
  const Argument* arg = ctx.op.input(name);
  if (!arg) return false;
  for (const Binding& b : arg->bindings) {
    if (b.is_reference() && !ctx.index.is_compile_time_value(b.name)) return true;
  }
  return false;
}

std::string first_reference(const Op& op, std::string_view name) {
  const Argument* arg = op.input(name);
  if (!arg) return {};
  for (const Binding& b : arg->bindings) {
    if (b.is_reference()) return b.name;
  }
  return {};
}

bool is_gather(std::string_view type) { return op_kind(type) == OpKind::kGather; }

// Ops whose weight operand is what compression rules R20..R23 talk about.
bool is_weight_consumer(std::string_view type) {
  return type_in(type, {"conv", "conv_transpose", "conv_quantized", "linear", "matmul", "einsum"});
}

bool has_source(const std::vector<CompressionSource>& sources, CompressionSource::Kind kind,
                std::string& detail) {
  for (const CompressionSource& s : sources) {
    if (s.kind != kind) continue;
    detail = fmt::format("weight '{}' from {} '{}'{}", s.value, s.op->type, s.op->outputs[0].name,
                         s.granularity.empty() ? "" : " (" + s.granularity + ")");
    return true;
  }
  return false;
}

// Classifies a constexpr_blockwise_shift_scale by comparing its data and scale shapes.
void classify_blockwise(const GraphIndex& index, const Op& op, CompressionSource& source) {
  // The first output has the dense shape in both variants (the sparse one outputs the mask).
  const ValueType* data = op.outputs.empty() ? nullptr : tensor_of(&op.outputs[0].type);
  const ValueType* scale = tensor_of(param_type(index, op, "scale"));
  source.kind = CompressionSource::Kind::kBlockwisePerBlock;
  if (!data || !scale || !data->rank_known || !scale->rank_known ||
      data->shape.size() != scale->shape.size()) {
    source.granularity = "scale shape not comparable with the data shape: assumed per-block";
    return;
  }
  int channel_axes = 0;
  for (size_t axis = 0; axis < data->shape.size(); ++axis) {
    int64_t d = data->shape[axis];
    int64_t s = scale->shape[axis];
    if (d <= 0 || s <= 0) {
      source.granularity = fmt::format("unknown dim on axis {}: assumed per-block", axis);
      return;
    }
    if (s == 1) continue;
    if (s < d) {
      source.granularity = fmt::format("block {} on axis {}", d / s, axis);
      return;
    }
    ++channel_axes;  // s == d (or larger, which the op rejects anyway)
    if (channel_axes > 1) {
      source.granularity = fmt::format("block 1 on axis {}", axis);
      return;
    }
  }
  source.kind = CompressionSource::Kind::kBlockwisePerChannel;
  source.granularity = channel_axes == 0 ? "per-tensor" : "per-channel";
}

// `weight` is the name the consumer reads; the chain behind it is walked through constexpr ops.
void collect_sources(const GraphIndex& index, const Op& op, const std::string* weight, int depth,
                     std::vector<CompressionSource>& out) {
  if (depth > 8) return;  // constexpr chains are two or three ops long; guard cycles anyway
  for (const auto& [key, arg] : op.inputs) {
    for (const Binding& b : arg.bindings) {
      if (!b.is_reference()) continue;
      const ValueInfo* v = index.find(b.name);
      if (!v || !v->producer || !v->producer->is_constexpr()) continue;
      const Op& producer = *v->producer;
      CompressionSource source;
      source.op = &producer;
      source.value = weight ? *weight : b.name;
      // The family comes from the weight-format table, the one place a form is named.
      const WeightFormat* format = find_weight_format(ParamTypes(
          producer, [&index](const std::string& name) -> const ValueType* {
            const ValueInfo* info = index.find(name);
            return info == nullptr ? nullptr : info->type;
          }));
      switch (format == nullptr ? WeightFamily::kNone : format->family) {
        case WeightFamily::kLut: source.kind = CompressionSource::Kind::kLut; break;
        case WeightFamily::kAffine: source.kind = CompressionSource::Kind::kAffine; break;
        case WeightFamily::kBlockwise: classify_blockwise(index, producer, source); break;
        case WeightFamily::kSparse: source.kind = CompressionSource::Kind::kSparse; break;
        case WeightFamily::kNone: break;
      }
      out.push_back(std::move(source));
      collect_sources(index, producer, weight ? weight : &b.name, depth + 1, out);
    }
  }
}

}  // namespace

std::vector<CompressionSource> compression_sources(const GraphIndex& index, const Op& op) {
  std::vector<CompressionSource> out;
  collect_sources(index, op, nullptr, 0, out);
  return out;
}

uint64_t tensor_type_bytes(const ValueType& type) {
  if (!type.is_tensor() || !type.rank_known) return 0;
  uint64_t n = 1;
  for (int64_t d : type.shape) {
    if (d < 0) return 0;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      return std::numeric_limits<uint64_t>::max();
    }
    n *= static_cast<uint64_t>(d);
  }
  uint64_t bits = static_cast<uint64_t>(std::max(dtype_bits(type.dtype), 0));
  if (bits == 0) return 0;
  if (n > (std::numeric_limits<uint64_t>::max() - 7) / bits) return std::numeric_limits<uint64_t>::max();
  return (n * bits + 7) / 8;
}

namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

uint64_t block_blob_bytes(const Block& block) {
  uint64_t total = 0;
  for (const Op& op : block.ops) {
    if (op.is_compile_time()) {
      for (const auto& [key, value] : op.attributes) {
        if (value.is_blob()) total = saturating_add(total, tensor_type_bytes(value.type));
      }
      for (const auto& [key, arg] : op.inputs) {
        for (const Binding& b : arg.bindings) {
          if (!b.is_reference() && b.literal->is_blob()) {
            total = saturating_add(total, tensor_type_bytes(b.literal->type));
          }
        }
      }
    }
    for (const Block& nested : op.blocks) total = saturating_add(total, block_blob_bytes(nested));
  }
  return total;
}

bool block_has_runtime_dtype(const Block& block, DType dtype) {
  for (const Op& op : block.ops) {
    if (op.is_compile_time()) continue;
    for (const NamedType& out : op.outputs) {
      const ValueType* t = tensor_of(&out.type);
      if (t && t->dtype == dtype) return true;
    }
    for (const Block& nested : op.blocks) {
      if (block_has_runtime_dtype(nested, dtype)) return true;
    }
  }
  return false;
}

uint64_t element_count(const ValueType* t) {
  if (!t || !t->is_tensor() || !t->rank_known) return 0;
  uint64_t n = 1;
  for (int64_t d : t->shape) {
    if (d < 0) return 0;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      return std::numeric_limits<uint64_t>::max();
    }
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

int64_t last_dim(const ValueType* t) {
  return t && t->is_tensor() && t->rank_known && !t->shape.empty() ? t->shape.back() : -1;
}

bool is_matrix_kind(OpKind kind) {
  return kind == OpKind::kMatmul || kind == OpKind::kConv || kind == OpKind::kConvTranspose ||
         kind == OpKind::kConvQuantized || kind == OpKind::kAttention;
}

uint64_t block_matrix_macs(const GraphIndex& index, const Block& block, int64_t& unknown_size) {
  uint64_t total = 0;
  for (const Op& op : block.ops) {
    const uint64_t macs = op_matrix_macs(index, op);
    // op_matrix_macs answers 0 when a shape is unknown: count such ops, so that G5 never says
    // "below 512^3" of work it could not measure.
    if (macs == 0 && is_matrix_kind(op_kind(normalize_op_type(op.type)))) ++unknown_size;
    total = saturating_add(total, macs);
    for (const Block& nested : op.blocks) {
      total = saturating_add(total, block_matrix_macs(index, nested, unknown_size));
    }
  }
  return total;
}

}  // namespace

uint64_t op_matrix_macs(const GraphIndex& index, const Op& op) {
  std::string type = normalize_op_type(op.type);
  if (op.outputs.empty()) return 0;
  uint64_t out = element_count(&op.outputs[0].type);
  OpKind kind = op_kind(type);
  if (kind == OpKind::kMatmul) {
    int64_t k = last_dim(param_type(index, op, "x"));  // reduction depth (transpose_x aside)
    return k > 0 ? saturating_mul(out, static_cast<uint64_t>(k)) : 0;
  }
  if (kind == OpKind::kConv || kind == OpKind::kConvTranspose || kind == OpKind::kConvQuantized) {
    const ValueType* w = tensor_of(param_type(index, op, "weight"));
    if (!w || !w->rank_known || w->shape.empty() || w->shape[0] <= 0) return 0;
    uint64_t per_output = element_count(w) / static_cast<uint64_t>(w->shape[0]);
    return saturating_mul(out, per_output);
  }
  if (kind == OpKind::kAttention) {
    const ValueType* k = tensor_of(param_type(index, op, "key"));
    if (!k || !k->rank_known || k->shape.size() < 2) return 0;
    int64_t keys = k->shape[k->shape.size() - 2];
    return keys > 0 ? saturating_mul(saturating_mul(out, static_cast<uint64_t>(keys)), 2) : 0;
  }
  return 0;
}

uint64_t blob_weight_bytes(const Program& program) {
  uint64_t total = 0;
  for (const Function& f : program.functions) total = saturating_add(total, block_blob_bytes(f.block));
  return total;
}

GraphFacts compute_graph_facts(const Function& function, const GraphIndex& index,
                               const ModelFacts& model, uint64_t weight_bytes) {
  GraphFacts facts;
  facts.weight_bytes = weight_bytes;
  bool any_fp16 = block_has_runtime_dtype(function.block, DType::kF16);
  bool any_fp32 = block_has_runtime_dtype(function.block, DType::kF32);
  for (const NamedType& in : function.inputs) {
    const ValueType* t = tensor_of(&in.type);
    if (t && t->dtype == DType::kF16) any_fp16 = true;
  }
  facts.fp32_function = any_fp32 && !any_fp16;
  facts.matrix_macs = block_matrix_macs(index, function.block, facts.matrix_ops_unknown_size);
  if (model.info) {
    for (const FeatureInfo& f : model.info->inputs) {
      bool same_function = f.function.empty() || f.function == function.name;
      if (same_function && f.range_flexible) {
        facts.range_input = f.name;
        break;
      }
    }
  }
  // The program itself declares RangeDims too (model.mil's FlexibleShapeInformation): an
  // .mlmodelc without metadata.json, or with one that omits the ranges, is still range-shaped.
  if (facts.range_input.empty()) {
    for (const NamedType& in : function.inputs) {
      if (flexible_shape_entry(function, "RangeDims", in.name) != nullptr) {
        facts.range_input = in.name;
        break;
      }
    }
  }
  return facts;
}

// --- Graph level -----------------------------------------------------------------------------

bool pred_fp32_program(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !ctx.facts.fp32_function) return false;
  detail = fmt::format("function '{}' has fp32 runtime values and no fp16 one",
                       ctx.index.function().name);
  return true;
}

bool pred_range_shaped_input(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || ctx.facts.range_input.empty()) return false;
  detail = fmt::format("input '{}' has range-shaped dims", ctx.facts.range_input);
  return true;
}

bool pred_weight_size_over_limit(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || ctx.facts.weight_bytes <= ctx.options.max_weight_bytes) return false;
  detail = fmt::format("weights {} bytes > limit {} bytes", ctx.facts.weight_bytes,
                       ctx.options.max_weight_bytes);
  return true;
}

bool pred_rank_over_limit(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx)) return false;
  for (const BoundaryValue& v : boundary_values(ctx)) {
    const ValueType* t = tensor_of(v.type);
    if (t && t->rank_known && static_cast<int64_t>(t->shape.size()) > ctx.options.max_rank) {
      detail = fmt::format("'{}' has rank {} > {}", v.name, t->shape.size(), ctx.options.max_rank);
      return true;
    }
  }
  return false;
}

bool pred_dim_over_limit(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx)) return false;
  for (const BoundaryValue& v : boundary_values(ctx)) {
    const ValueType* t = tensor_of(v.type);
    if (!t) continue;
    for (size_t axis = 0; axis < t->shape.size(); ++axis) {
      if (t->shape[axis] > ctx.options.max_dim) {
        detail = fmt::format("'{}' dim {} on axis {} > {}", v.name, t->shape[axis], axis,
                             ctx.options.max_dim);
        return true;
      }
    }
  }
  return false;
}

bool pred_boundary_cast(const RuleContext& ctx, std::string& detail) {
  if (ctx.type != "cast" || ctx.op.outputs.empty()) return false;
  std::string x = first_reference(ctx.op, "x");
  const ValueInfo* in = x.empty() ? nullptr : ctx.index.find(x);
  const ValueType* in_type = in ? tensor_of(in->type) : nullptr;
  const NamedType& out = ctx.op.outputs[0];
  const ValueType* out_type = tensor_of(&out.type);
  if (!in_type || !out_type) return false;
  if (in->is_function_input && in_type->dtype == DType::kF32 && out_type->dtype == DType::kF16) {
    detail = fmt::format("model input '{}' is fp32", x);
    return true;
  }
  if (ctx.index.is_function_output(out.name) && in_type->dtype == DType::kF16 &&
      out_type->dtype == DType::kF32) {
    detail = fmt::format("model output '{}' is fp32", out.name);
    return true;
  }
  return false;
}

bool pred_fp32_at_boundary(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx)) return false;
  for (const BoundaryValue& v : boundary_values(ctx)) {
    const ValueType* t = tensor_of(v.type);
    if (t && t->dtype == DType::kF32) {
      detail = fmt::format("'{}' is fp32", v.name);
      return true;
    }
  }
  return false;
}

bool pred_dynamic_shape_input(const RuleContext& ctx, std::string& detail) {
  struct ShapeParams {
    std::string_view op;
    std::array<std::string_view, 3> params;
  };
  static constexpr std::array<ShapeParams, 6> kShapeParams = {{
      {"reshape", {"shape", "", ""}},
      {"slice_by_index", {"begin", "end", ""}},
      {"slice_by_size", {"begin", "size", ""}},
      {"tile", {"reps", "", ""}},
      {"pad", {"pad", "", ""}},
      {"fill", {"shape", "", ""}},
  }};
  for (const ShapeParams& sp : kShapeParams) {
    if (ctx.type != sp.op) continue;
    for (std::string_view p : sp.params) {
      if (!p.empty() && is_runtime_reference(ctx, p)) {
        detail = fmt::format("'{}' of {} is computed at runtime ('{}')", p, sp.op,
                             first_reference(ctx.op, p));
        return true;
      }
    }
  }
  return false;
}

// --- Compile-time ops ------------------------------------------------------------------------

bool pred_const_op(const RuleContext& ctx, std::string&) { return ctx.op.is_const(); }
bool pred_constexpr_op(const RuleContext& ctx, std::string&) { return ctx.op.is_constexpr(); }

// --- Ops off the ANE -------------------------------------------------------------------------

bool pred_inside_control_flow(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !ctx.enclosing_control_flow) return false;
  const Op& cf = *ctx.enclosing_control_flow;
  detail = fmt::format("inside {} '{}'", normalize_op_type(cf.type),
                       cf.outputs.empty() ? std::string() : cf.outputs[0].name);
  return true;
}
bool pred_control_flow(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kControlFlow);
}
bool pred_recurrent(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kRecurrent);
}
bool pred_scatter(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kScatter); }
bool pred_topk_sort(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kSort); }
bool pred_band_part(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kBandPart); }

namespace {

// The tensor a state op reads or writes: the state behind `input` (read_state, write_state,
// coreml_update_state) or the updated tensor `x` (slice_update).
struct StateTensor {
  std::string name;
  const ValueType* type = nullptr;
};
StateTensor state_tensor(const RuleContext& ctx) {
  for (const char* param : {"input", "state", "x"}) {
    std::string ref = first_reference(ctx.op, param);
    if (ref.empty()) continue;
    const ValueInfo* v = ctx.index.find(ref);
    if (v) return {ref, tensor_of(v->type)};
  }
  return {};
}

}  // namespace

bool pred_state_unaligned(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kState)) return false;
  StateTensor st = state_tensor(ctx);
  int64_t last = last_dim(st.type);
  if (last <= 0 || last % ctx.options.state_last_dim_multiple == 0) return false;
  detail = fmt::format("'{}' last dim {} is not a multiple of {}", st.name, last,
                       ctx.options.state_last_dim_multiple);
  return true;
}

bool pred_state_large_update(const RuleContext& ctx, std::string& detail) {
  if (ctx.type != "slice_update") return false;
  const ValueType* update = tensor_of(param_type(ctx.index, ctx.op, "update"));
  uint64_t n = element_count(update);
  if (n == 0 || n <= ctx.options.max_state_update_elements) return false;
  detail = fmt::format("update '{}' has {} elements > {}", first_reference(ctx.op, "update"), n,
                       ctx.options.max_state_update_elements);
  return true;
}

bool pred_state_op(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kState)) return false;
  StateTensor st = state_tensor(ctx);
  int64_t last = last_dim(st.type);
  detail = last > 0 ? fmt::format("'{}' last dim {} is a multiple of {}", st.name, last,
                                  ctx.options.state_last_dim_multiple)
                    : fmt::format("'{}': last dim unknown, alignment not checked", st.name);
  return true;
}

// --- Gathers ---------------------------------------------------------------------------------

bool pred_gather_large_table(const RuleContext& ctx, std::string& detail) {
  if (!is_gather(ctx.type) || is_runtime_reference(ctx, "x")) return false;
  const ValueType* table = tensor_of(param_type(ctx.index, ctx.op, "x"));
  if (!table || !table->rank_known || table->shape.empty()) return false;
  int64_t axis = 0;
  if (auto a = inline_ints(ctx, "axis"); a && a->size() == 1) axis = (*a)[0];
  int64_t rank = static_cast<int64_t>(table->shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  int64_t rows = table->shape[static_cast<size_t>(axis)];
  if (rows <= ctx.options.max_lookup_rows) return false;
  detail = fmt::format("table '{}' has {} rows on axis {} > {}", first_reference(ctx.op, "x"),
                       rows, axis, ctx.options.max_lookup_rows);
  return true;
}

bool pred_gather_const_table(const RuleContext& ctx, std::string& detail) {
  if (!is_gather(ctx.type) || is_runtime_reference(ctx, "x")) return false;
  detail = fmt::format("table '{}' is a constant", first_reference(ctx.op, "x"));
  return true;
}

bool pred_gather_runtime_indices(const RuleContext& ctx, std::string& detail) {
  if (!is_gather(ctx.type) || !is_runtime_reference(ctx, "x") ||
      !is_runtime_reference(ctx, "indices")) {
    return false;
  }
  detail = fmt::format("indices '{}' computed at runtime", first_reference(ctx.op, "indices"));
  return true;
}

bool pred_gather_runtime_table(const RuleContext& ctx, std::string&) {
  return is_gather(ctx.type);
}

// --- Compressed weights ----------------------------------------------------------------------

bool pred_per_block_weight(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx)) return false;
  return has_source(compression_sources(ctx.index, ctx.op),
                    CompressionSource::Kind::kBlockwisePerBlock, detail);
}

bool pred_lut_with_channel_scale(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !is_weight_consumer(ctx.type)) return false;
  auto sources = compression_sources(ctx.index, ctx.op);
  std::string lut;
  return has_source(sources, CompressionSource::Kind::kLut, lut) &&
         has_source(sources, CompressionSource::Kind::kBlockwisePerChannel, detail);
}

bool pred_affine_weight(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !is_weight_consumer(ctx.type)) return false;
  return has_source(compression_sources(ctx.index, ctx.op), CompressionSource::Kind::kAffine,
                    detail);
}

bool pred_per_channel_blockwise_weight(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !is_weight_consumer(ctx.type)) return false;
  return has_source(compression_sources(ctx.index, ctx.op),
                    CompressionSource::Kind::kBlockwisePerChannel, detail);
}

bool pred_lut_weight(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !is_weight_consumer(ctx.type)) return false;
  return has_source(compression_sources(ctx.index, ctx.op), CompressionSource::Kind::kLut, detail);
}

bool pred_sparse_weight(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || !is_weight_consumer(ctx.type)) return false;
  return has_source(compression_sources(ctx.index, ctx.op), CompressionSource::Kind::kSparse,
                    detail);
}

// --- Integer tensors -------------------------------------------------------------------------

// The first runtime input or output of a compute op with dtype `pick`, named for the detail.
template <typename Pick>
bool runtime_value_of_type(const RuleContext& ctx, Pick pick, std::string& detail) {
  for (const BoundaryValue& v : boundary_values(ctx)) {
    const ValueType* t = tensor_of(v.type);
    if (t && pick(t->dtype)) {
      detail = fmt::format("'{}' is {}", v.name, dtype_name(t->dtype));
      return true;
    }
  }
  return false;
}

bool pred_int32_runtime_tensor(const RuleContext& ctx, std::string& detail) {
  return is_compute(ctx) && runtime_value_of_type(ctx, is_int32_like, detail);
}

bool pred_bool_runtime_tensor(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx)) return false;
  return runtime_value_of_type(ctx, [](DType t) { return t == DType::kBool; }, detail);
}

bool pred_other_type_runtime_tensor(const RuleContext& ctx, std::string& detail) {
  // A cast changes type by definition (R6d says which casts); quantize / dequantize exist to
  // move between fp16 and int8 (R24).
  if (!is_compute(ctx) || kind_is(ctx, OpKind::kCast) || kind_is(ctx, OpKind::kActivationQuant)) {
    return false;
  }
  return runtime_value_of_type(ctx, [](DType t) {
    return t != DType::kF16 && t != DType::kF32 && !is_int32_like(t) && t != DType::kBool &&
           t != DType::kString && t != DType::kInvalid;
  }, detail);
}

// --- ANE ops ---------------------------------------------------------------------------------

bool pred_arg_reduce(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kArgReduce);
}

bool pred_index_producer(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kIndex);
}

bool pred_conv(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kConv); }
bool pred_conv_transpose(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kConvTranspose);
}
bool pred_conv_quantized(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kConvQuantized);
}
bool pred_linear_matmul(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kMatmul);
}

namespace {

// The largest element count among the Q/K/V operands of an attention op; 0 when unknown.
uint64_t sdpa_max_elements(const RuleContext& ctx) {
  uint64_t most = 0;
  for (const char* p : {"query", "key", "value"}) {
    most = std::max(most, element_count(tensor_of(param_type(ctx.index, ctx.op, p))));
  }
  return most;
}

}  // namespace

bool pred_sdpa_small(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kAttention)) return false;
  uint64_t n = sdpa_max_elements(ctx);
  if (n == 0 || n >= static_cast<uint64_t>(ctx.options.min_sdpa_elements)) return false;
  detail = fmt::format("largest of Q/K/V has {} elements < {}", n, ctx.options.min_sdpa_elements);
  return true;
}
bool pred_sdpa_unknown_size(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kAttention) || sdpa_max_elements(ctx) != 0) return false;
  detail = "Q/K/V sizes unknown";
  return true;
}
bool pred_sdpa(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kAttention)) return false;
  detail = fmt::format("largest of Q/K/V has {} elements >= {}", sdpa_max_elements(ctx),
                       ctx.options.min_sdpa_elements);
  return true;
}

bool pred_layer_norm(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kLayerNorm)) return false;
  const ValueType* x = tensor_of(param_type(ctx.index, ctx.op, "x"));
  std::string axes = "default";
  if (auto a = inline_ints(ctx, "axes")) axes = fmt::format("[{}]", fmt::join(*a, ", "));
  detail = x && x->rank_known ? fmt::format("rank-{} input, axes {}", x->shape.size(), axes)
                              : fmt::format("input rank unknown, axes {}", axes);
  return true;
}
bool pred_other_norm(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kOtherNorm);
}
bool pred_softmax(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kSoftmax); }

bool pred_channel_broadcast(const RuleContext& ctx, std::string& detail) {
  OpKind k = op_kind(ctx.type);
  if (k != OpKind::kElementwise && k != OpKind::kElementwiseUnobserved) return false;
  std::string x = first_reference(ctx.op, "x");
  std::string y = first_reference(ctx.op, "y");
  if (x.empty() || y.empty() || ctx.index.is_compile_time_value(x) ||
      ctx.index.is_compile_time_value(y)) {
    return false;
  }
  const ValueInfo* vx = ctx.index.find(x);
  const ValueInfo* vy = ctx.index.find(y);
  const ValueType* tx = vx ? tensor_of(vx->type) : nullptr;
  const ValueType* ty = vy ? tensor_of(vy->type) : nullptr;
  if (!tx || !ty || !tx->rank_known || !ty->rank_known || tx->shape.size() != ty->shape.size() ||
      tx->shape.size() < 3) {
    return false;
  }
  auto spatial_one = [](const ValueType* t) {
    size_t r = t->shape.size();
    return t->shape[r - 1] == 1 && t->shape[r - 2] == 1;
  };
  auto spatial_many = [](const ValueType* t) {
    size_t r = t->shape.size();
    return t->shape[r - 1] > 1 || t->shape[r - 2] > 1;  // no product: dims come from input
  };
  const bool x_small = spatial_one(tx) && spatial_many(ty);
  const bool y_small = spatial_one(ty) && spatial_many(tx);
  if (!x_small && !y_small) return false;
  detail = fmt::format("runtime '{}' {} broadcast over '{}' {}", x_small ? x : y,
                       shape_str((x_small ? tx : ty)->shape), x_small ? y : x,
                       shape_str((x_small ? ty : tx)->shape));
  return true;
}

bool pred_elementwise(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kElementwise);
}
bool pred_elementwise_unobserved(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kElementwiseUnobserved);
}
bool pred_cast_fp16(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kCast); }

bool pred_log_sum_exp(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kLogSumExp);
}
bool pred_reduction(const RuleContext& ctx, std::string&) { return kind_is(ctx, OpKind::kReduce); }
bool pred_reduction_unobserved(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kReduceUnobserved);
}

namespace {

// The largest value of an inline integer parameter (kernel_sizes, strides); nullopt if absent.
std::optional<int64_t> max_inline(const RuleContext& ctx, std::string_view name) {
  auto v = inline_ints(ctx, name);
  if (!v || v->empty()) return std::nullopt;
  return *std::max_element(v->begin(), v->end());
}

}  // namespace

bool pred_pool_large_kernel(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kPool)) return false;
  auto k = max_inline(ctx, "kernel_sizes");
  if (!k || *k <= ctx.options.max_pool_kernel) return false;
  detail = fmt::format("kernel {} > {}", *k, ctx.options.max_pool_kernel);
  return true;
}
bool pred_pool_large_stride(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kPool)) return false;
  auto s = max_inline(ctx, "strides");
  if (!s || *s <= ctx.options.max_pool_stride) return false;
  detail = fmt::format("stride {} > {}", *s, ctx.options.max_pool_stride);
  return true;
}
bool pred_pool(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kPool)) return false;
  auto k = max_inline(ctx, "kernel_sizes");
  auto s = max_inline(ctx, "strides");
  detail = fmt::format("kernel {}, stride {}", k ? std::to_string(*k) : "unknown",
                       s ? std::to_string(*s) : "unknown");
  return true;
}

namespace {

// Scale factors of an upsample from the input and output shapes (last two axes), as
// "HxW"; nullopt when a shape is unknown. `exact2` is set when every scaled axis is exactly 2x.
std::optional<std::string> upsample_scale(const RuleContext& ctx, bool& exact2) {
  const ValueType* in = tensor_of(param_type(ctx.index, ctx.op, "x"));
  const ValueType* out = ctx.op.outputs.empty() ? nullptr : tensor_of(&ctx.op.outputs[0].type);
  if (!in || !out || !in->rank_known || !out->rank_known || in->shape.size() < 2 ||
      in->shape.size() != out->shape.size()) {
    return std::nullopt;
  }
  exact2 = true;
  std::string text;
  for (size_t i = in->shape.size() - 2; i < in->shape.size(); ++i) {
    int64_t a = in->shape[i];
    int64_t b = out->shape[i];
    if (a <= 0 || b <= 0) return std::nullopt;
    if (b != a && !(b % 2 == 0 && b / 2 == a)) exact2 = false;  // b == 2a without overflow
    text += fmt::format("{}{:g}", text.empty() ? "" : "x", static_cast<double>(b) / static_cast<double>(a));
  }
  return text;
}

}  // namespace

bool pred_upsample_not_2x(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kUpsample)) return false;
  bool exact2 = false;
  auto scale = upsample_scale(ctx, exact2);
  if (!scale || exact2) return false;
  detail = fmt::format("scale {} (height x width)", *scale);
  return true;
}
bool pred_upsample_2x(const RuleContext& ctx, std::string& detail) {
  if (!kind_is(ctx, OpKind::kUpsample)) return false;
  bool exact2 = false;
  auto scale = upsample_scale(ctx, exact2);
  if (!scale || !exact2) return false;
  detail = fmt::format("scale {} (height x width)", *scale);
  return true;
}
bool pred_resample(const RuleContext& ctx, std::string& detail) {
  if (kind_is(ctx, OpKind::kUpsample)) {  // an upsample whose shapes are unknown lands here
    detail = "scale unknown (shapes not static)";
    return true;
  }
  return kind_is(ctx, OpKind::kResample);
}

bool pred_data_movement(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kDataMovement);
}
bool pred_data_movement_unobserved(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kDataMovementUnobserved);
}

bool pred_activation_quant(const RuleContext& ctx, std::string&) {
  return kind_is(ctx, OpKind::kActivationQuant);
}

bool pred_listed_unknown(const RuleContext& ctx, std::string& detail) {
  const OpKindInfo* k = find_op_kind(ctx.type);
  if (!k || k->kind != OpKind::kUnknown) return false;
  detail = std::string(k->why);
  return true;
}

// --- Overlays --------------------------------------------------------------------------------

bool pred_small_graph_unknown_size(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx) || ctx.facts.matrix_ops_unknown_size == 0 ||
      ctx.facts.matrix_macs >= ctx.options.min_graph_macs) {
    return false;
  }
  detail = fmt::format("function '{}': {} conv / matmul / attention op(s) of unknown size, {} "
                       "multiply-accumulates known < {}", ctx.index.function().name,
                       ctx.facts.matrix_ops_unknown_size, ctx.facts.matrix_macs,
                       ctx.options.min_graph_macs);
  return true;
}

bool pred_small_graph(const RuleContext& ctx, std::string& detail) {
  // With matrix work of unknown size the total is only a lower bound: G5b speaks for it.
  if (!is_compute(ctx) || ctx.facts.matrix_ops_unknown_size > 0 ||
      ctx.facts.matrix_macs >= ctx.options.min_graph_macs) {
    return false;
  }
  detail = fmt::format("function '{}' does {} multiply-accumulates < {}", ctx.index.function().name,
                       ctx.facts.matrix_macs, ctx.options.min_graph_macs);
  return true;
}

bool pred_any_op(const RuleContext&, std::string&) { return true; }

}  // namespace sg::placement
