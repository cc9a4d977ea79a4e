// The weight-format table (weight_formats.def) and the predicates that tell an op's forms apart
// from the declared types of its parameters.
#include "ops/weight_formats.h"

#include "ops/constexpr_stream.h"


namespace sg {
namespace {

bool is_8bit(DType t) { return t == DType::kI8 || t == DType::kU8; }
bool is_4bit(DType t) { return t == DType::kI4 || t == DType::kU4; }

int64_t known_numel(const ValueType* t) {
  if (t == nullptr || !t->rank_known || t->has_unknown_dims()) return -1;
  return numel(t->shape);
}

DType dtype_of(const ParamTypes& p, std::string_view name) {
  const ValueType* t = p.type(name);
  return t == nullptr ? DType::kInvalid : t->dtype;
}

// ---- predicates (the `predicate` column)
bool any(const ParamTypes&) { return true; }
bool is_fp16(const ParamTypes& p) { return dtype_of(p, "val") == DType::kF16; }
bool is_fp32(const ParamTypes& p) { return dtype_of(p, "val") == DType::kF32; }
bool has_shape(const ParamTypes& p) { return p.has("shape"); }
// iOS18 scalar palettization: one value per index (the LUT's last dim is 1), byte-sized entries.
bool scalar_lut(const ParamTypes& p) {
  const ValueType* lut = p.type("lut");
  return lut != nullptr && lut->rank_known && !lut->shape.empty() && lut->shape.back() == 1 &&
         dtype_bits(lut->dtype) >= 8;
}
bool int8_data(const ParamTypes& p) { return is_8bit(dtype_of(p, "data")); }
bool int4_data(const ParamTypes& p) { return is_4bit(dtype_of(p, "data")); }
bool int8_one_scale(const ParamTypes& p) { return int8_data(p) && known_numel(p.type("scale")) == 1; }
// One scale per output channel: the scale grid is [C, 1, ..., 1].
bool int8_axis0_scale(const ParamTypes& p) {
  const ValueType* s = p.type("scale");
  if (!int8_data(p) || known_numel(s) < 1 || s->shape.empty()) return false;
  return known_numel(s) == s->shape[0];
}
bool scalar_scale(const ParamTypes& p) {
  return known_numel(p.type("scale")) == 1 && known_numel(p.type("zero_point")) == 1;
}

// ---- decoder columns
constexpr auto none = nullptr;
constexpr auto lut_packed = &wdec::stream_lut_packed;
constexpr auto lut_grouped = &wdec::stream_lut_grouped;
constexpr auto shift_scale_stream = &wdec::stream_shift_scale;
constexpr auto affine_stream = &wdec::stream_affine;
constexpr auto lut = &wdec::codes_lut;
constexpr auto shift_scale_codes = &wdec::codes_shift_scale;
constexpr auto affine_codes = &wdec::codes_affine;

#define SG_STREAM_none none
#define SG_STREAM_lut_packed lut_packed
#define SG_STREAM_lut_grouped lut_grouped
#define SG_STREAM_shift_scale shift_scale_stream
#define SG_STREAM_affine affine_stream
#define SG_CODES_none none
#define SG_CODES_lut lut
#define SG_CODES_shift_scale shift_scale_codes
#define SG_CODES_affine affine_codes
#define SG_COST_view WeightCost::kView
#define SG_COST_table WeightCost::kTable
#define SG_COST_scale WeightCost::kScale
#define SG_COST_element WeightCost::kElement

const WeightFormat kFormats[] = {
#define SG_WEIGHT_FORMAT(name, op, predicate, stream, codes, cost) \
  {#name, #op, &predicate, SG_STREAM_##stream, SG_CODES_##codes, SG_COST_##cost},
#include "ops/weight_formats.def"
#undef SG_WEIGHT_FORMAT
};

}  // namespace

const char* weight_cost_name(WeightCost c) {
  switch (c) {
    case WeightCost::kView: return "view";
    case WeightCost::kTable: return "table";
    case WeightCost::kScale: return "scale";
    case WeightCost::kElement: return "element";
  }
  return "?";
}

ParamTypes::ParamTypes(const Function& fn, const Op& op)
    : op_(op), lookup_([&fn](const std::string& name) -> const ValueType* {
        if (const NamedType* in = fn.input(name)) return &in->type;
        for (const Op& o : fn.block.ops) {
          for (const NamedType& out : o.outputs) {
            if (out.name == name) return &out.type;
          }
        }
        return nullptr;
      }) {}

bool ParamTypes::has(std::string_view name) const {
  return op_.input(name) != nullptr || op_.attribute(name) != nullptr;
}

const ValueType* ParamTypes::type(std::string_view name) const {
  if (const Argument* arg = op_.input(name)) {
    if (arg->bindings.size() != 1) return nullptr;
    const Binding& b = arg->bindings[0];
    return b.is_reference() ? lookup_(b.name) : &b.literal->type;
  }
  if (const Value* v = op_.attribute(name)) return &v->type;
  return nullptr;
}

std::span<const WeightFormat> weight_formats() { return kFormats; }

const WeightFormat* find_weight_format(const ParamTypes& params) {
  const std::string& type = params.op().type;
  for (const WeightFormat& f : kFormats) {
    if (type == f.op && f.matches(params)) return &f;
  }
  return nullptr;
}

}  // namespace sg
