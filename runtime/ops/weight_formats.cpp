// The weight-format table (weight_formats.def) and the predicates that tell an op's forms apart
// from the declared types of its parameters.
#include "ops/weight_formats.h"

#include "ops/constexpr_stream.h"


namespace sg {

// "No decoder" in the table's decoder columns (never called: the table holds null).
namespace wdec {
Result<std::optional<StreamedWeight>> stream_none(OpContext&) { return std::optional<StreamedWeight>(); }
Result<std::optional<WeightCodes>> codes_none(OpContext&) { return std::optional<WeightCodes>(); }
}  // namespace wdec

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

// ---- the words predicates are written in (the `predicate` column)
int64_t numel_of(const ParamTypes& p, std::string_view name) { return known_numel(p.type(name)); }
// iOS18 scalar palettization: one value per index (the LUT's last dim is 1), byte-sized entries.
bool scalar_lut(const ParamTypes& p) {
  const ValueType* lut = p.type("lut");
  return lut != nullptr && lut->rank_known && !lut->shape.empty() && lut->shape.back() == 1 &&
         dtype_bits(lut->dtype) >= 8;
}
// One value per output channel: `name` has the grid [C, 1, ..., 1].
bool one_per_row(const ParamTypes& p, std::string_view name) {
  const ValueType* s = p.type(name);
  if (known_numel(s) < 1 || s->shape.empty()) return false;
  return known_numel(s) == s->shape[0];
}

#define SG_COST_view WeightCost::kView
#define SG_COST_table WeightCost::kTable
#define SG_COST_scale WeightCost::kScale
#define SG_COST_element WeightCost::kElement
#define SG_FAMILY_none WeightFamily::kNone
#define SG_FAMILY_lut WeightFamily::kLut
#define SG_FAMILY_affine WeightFamily::kAffine
#define SG_FAMILY_blockwise WeightFamily::kBlockwise
#define SG_FAMILY_sparse WeightFamily::kSparse

// A decoder column: the wdec function, or null for `none`.
template <typename F>
F* decoder_or_null(F* f, F* none) {
  return f == none ? nullptr : f;
}

const WeightFormat kFormats[] = {
#define SG_WEIGHT_FORMAT(name, op, predicate, stream, codes, cost, family)                   \
  {#name, #op, [](const ParamTypes& p) -> bool { (void)p; return (predicate); },                    \
   decoder_or_null(&wdec::stream_##stream, &wdec::stream_none),                             \
   decoder_or_null(&wdec::codes_##codes, &wdec::codes_none), SG_COST_##cost, SG_FAMILY_##family},
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
    : op_(op), lookup_([&fn](const std::string& name) { return fn.value_type(name); }) {}

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
