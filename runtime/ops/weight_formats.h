// The table of weight formats (weight_formats.def): for each way a compile-time value can be
// stored, the op that holds it, its range decoder, its codes, whether it can stream into a
// kernel and what decoding costs. The executor reads it when a run is prepared to decide how
// each weight is read (exec/weight_plan.h); stream_constexpr() and codes_constexpr()
// (constexpr_stream.h) dispatch through it, so no code elsewhere switches on constexpr op names.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/program.h"
#include "shardgate/weight_codes.h"

#include <functional>
#include <optional>
#include <span>
#include <string>

namespace sg {

// What decoding a weight costs per element, cheapest first.
enum class WeightCost : uint8_t {
  kView,     // read in place (a dense const, memory-mapped)
  kTable,    // one table lookup per weight (palettes)
  kScale,    // an integer widened and scaled per weight (fp16 roundings included)
  kElement,  // decoded element by element, only as a whole (sparse, vector palettes, casts)
};
const char* weight_cost_name(WeightCost c);  // "view", "table", "scale", "element"

// The declared types of an op's parameters, looked up without decoding anything: an inline
// literal's type, an attribute's type, or the declared type of the value a reference names.
class ParamTypes {
 public:
  using Lookup = std::function<const ValueType*(const std::string& value)>;
  ParamTypes(const Op& op, Lookup lookup) : op_(op), lookup_(std::move(lookup)) {}
  // Looks references up in `fn` (its inputs and the outputs of its block's ops).
  ParamTypes(const Function& fn, const Op& op);
  const Op& op() const { return op_; }
  bool has(std::string_view name) const;
  const ValueType* type(std::string_view name) const;  // null when absent or unknown

 private:
  const Op& op_;
  Lookup lookup_;
};

// The compression family a format belongs to, as placement's rules name it (R20..R23).
enum class WeightFamily : uint8_t { kNone, kLut, kAffine, kBlockwise, kSparse };

struct WeightFormat {
  const char* name;
  const char* op;
  bool (*matches)(const ParamTypes&);
  // The range decoder; null when the format is decoded only as a whole. nullopt from it means
  // the form turned out to have no range decoder after all (checked against the values).
  Result<std::optional<StreamedWeight>> (*stream)(OpContext& producer);
  Result<std::optional<WeightCodes>> (*codes)(OpContext& producer);
  WeightCost cost;
  WeightFamily family;

  bool can_stream() const { return stream != nullptr; }
};

std::span<const WeightFormat> weight_formats();
// The format of the value `op` produces; null for an op that is not const / constexpr_*.
const WeightFormat* find_weight_format(const ParamTypes& params);

// The range decoders and code readers the table's rows name, declared from the rows
// (repeated declarations of a shared decoder are harmless). stream_none and codes_none stand
// for "no decoder": the table holds null for them.
namespace wdec {
#define SG_WEIGHT_FORMAT(name, op, predicate, stream, codes, cost, family) \
  Result<std::optional<StreamedWeight>> stream_##stream(OpContext& producer);  \
  Result<std::optional<WeightCodes>> codes_##codes(OpContext& producer);
#include "ops/weight_formats.def"
#undef SG_WEIGHT_FORMAT
}  // namespace wdec

}  // namespace sg
