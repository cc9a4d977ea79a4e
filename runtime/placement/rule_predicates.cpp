// Conditions of the placement rules (rules.def). Each predicate answers one question about one
// op from value types and inline constants only; the order of evaluation lives in rules.def.
#include "placement/rule_predicates.h"

#include "shardgate/ops.h"

#include <fmt/format.h>

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

std::string_view family_of(std::string_view type) {
  const OpInfo* info = find_op(type);
  return info ? info->family : std::string_view();
}

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

bool is_gather(std::string_view type) {
  return type_in(type, {"gather", "gather_nd", "gather_along_axis"});
}

// Ops whose weight operand is what compression rules R20..R23 talk about.
bool is_weight_consumer(std::string_view type) {
  return type_in(type, {"conv", "conv_transpose", "linear", "matmul", "einsum"});
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
      const std::string& t = producer.type;
      if (t == "constexpr_lut_to_dense") {
        source.kind = CompressionSource::Kind::kLut;
      } else if (t == "constexpr_affine_dequantize") {
        source.kind = CompressionSource::Kind::kAffine;
      } else if (t == "constexpr_blockwise_shift_scale" ||
                 t == "constexpr_sparse_blockwise_shift_scale") {
        classify_blockwise(index, producer, source);
      } else if (t == "constexpr_sparse_to_dense" || t == "constexpr_lut_to_sparse") {
        source.kind = CompressionSource::Kind::kSparse;
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

}  // namespace

uint64_t blob_weight_bytes(const Program& program) {
  uint64_t total = 0;
  for (const Function& f : program.functions) total = saturating_add(total, block_blob_bytes(f.block));
  return total;
}

GraphFacts compute_graph_facts(const Function& function, const GraphIndex& index,
                               const ModelFacts& model, uint64_t weight_bytes) {
  (void)index;
  GraphFacts facts;
  facts.weight_bytes = weight_bytes;
  bool any_fp16 = block_has_runtime_dtype(function.block, DType::kF16);
  bool any_fp32 = block_has_runtime_dtype(function.block, DType::kF32);
  for (const NamedType& in : function.inputs) {
    const ValueType* t = tensor_of(&in.type);
    if (t && t->dtype == DType::kF16) any_fp16 = true;
  }
  facts.fp32_function = any_fp32 && !any_fp16;
  if (model.info) {
    for (const FeatureInfo& f : model.info->inputs) {
      bool same_function = f.function.empty() || f.function == function.name;
      if (same_function && f.range_flexible) {
        facts.range_input = f.name;
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

bool pred_control_flow(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"cond", "while_loop"});
}
bool pred_recurrent(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"lstm", "gru", "rnn"});
}
bool pred_scatter(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"scatter", "scatter_nd", "scatter_along_axis"});
}
bool pred_topk_sort(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"topk", "argsort"});
}
bool pred_band_part(const RuleContext& ctx, std::string&) { return ctx.type == "band_part"; }

bool pred_state_op(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"read_state", "write_state", "coreml_update_state", "slice_update"});
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

bool pred_int32_runtime_tensor(const RuleContext& ctx, std::string& detail) {
  if (!is_compute(ctx)) return false;
  for (const BoundaryValue& v : boundary_values(ctx)) {
    const ValueType* t = tensor_of(v.type);
    if (t && is_int32_like(t->dtype)) {
      detail = fmt::format("'{}' is {}", v.name, dtype_name(t->dtype));
      return true;
    }
  }
  return false;
}

// --- ANE ops ---------------------------------------------------------------------------------

bool pred_conv(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"conv", "conv_transpose"});
}
bool pred_linear_matmul(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"linear", "matmul", "einsum"});
}
bool pred_sdpa(const RuleContext& ctx, std::string&) {
  return ctx.type == "scaled_dot_product_attention";
}
bool pred_normalization(const RuleContext& ctx, std::string&) {
  return family_of(ctx.type) == "normalization";
}
bool pred_softmax(const RuleContext& ctx, std::string&) { return ctx.type == "softmax"; }

bool pred_elementwise(const RuleContext& ctx, std::string&) {
  std::string_view family = family_of(ctx.type);
  return family == "activation" || family == "elementwise_unary" ||
         family == "elementwise_binary" || family == "select";
}

bool pred_reduction(const RuleContext& ctx, std::string&) {
  return family_of(ctx.type) == "reduce";
}

bool pred_data_movement(const RuleContext& ctx, std::string&) {
  return type_in(ctx.type, {"concat", "split", "reshape", "transpose", "expand_dims", "squeeze",
                               "slice_by_index", "slice_by_size", "stack", "tile", "pad",
                               "identity", "reverse", "flatten2d"});
}

bool pred_any_op(const RuleContext&, std::string&) { return true; }

}  // namespace sg::placement
