// The integer codes behind a compressed weight, and how each code decodes: what the weight
// diagnostics (weight_diagnostics.h) read to say how well a quantization uses its bits without
// decoding the weight to floats first.
//
// Covered forms (runtime/format/README.md, "Compile-time weight forms"):
//   constexpr_affine_dequantize     int8/uint8 codes, one scale and zero point per tensor or
//                                   per channel along `axis`
//   constexpr_blockwise_shift_scale int4/uint4/int8/uint8 codes, one scale (and offset) per
//                                   block; the scale tensor's grid gives the blocks
//   constexpr_lut_to_dense          uint1..uint8 palette indices, one lookup table per group
//                                   (iOS18 scalar form) or per tensor (iOS16 form)
// Vector palettes, sparse forms and casts have no per-element code: weight_codes() returns
// nullopt for them and the diagnostics fall back to the decoded weight.
#pragma once

#include "shardgate/program.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

struct WeightCodes {
  enum class Kind : uint8_t { kLinear, kPalette };  // scale*(code - offset) / lut[code]
  Kind kind = Kind::kLinear;
  std::string op_type;     // the constexpr op, e.g. "constexpr_blockwise_shift_scale"
  Shape shape;             // the decoded weight's shape (row-major element order)
  DType code_dtype = DType::kInvalid;  // int8, uint4, ... as stored
  int bits = 0;            // bits per code
  bool is_signed = false;  // codes are two's complement (int4, int8)
  // Packed codes, LSB-first, one per weight element in row-major order (sub-byte dtypes stay
  // packed as blob storage holds them). Kept alive by `codes`.
  Tensor codes;
  // The group grid: one scale / lookup table per group. `block[d]` elements of the weight
  // along axis d share a group; group_shape[d] * block[d] == shape[d].
  Shape group_shape;
  std::vector<int64_t> block;
  int64_t group_count() const;
  // The decoded value of `code` (as stored: the signed value for int dtypes, the index for
  // palettes) in group `group` (row-major over group_shape), with the op's own arithmetic.
  std::function<float(int64_t group, int64_t code)> value;
  // Linear forms: |scale| per group (the quantization step). Empty for palettes.
  std::vector<float> step;

  // Code of element `e` (row-major), sign-extended for signed dtypes.
  int64_t code_at(int64_t e) const;
};

// The codes of compile-time value `value_name` of `function`, or nullopt when its producing op
// is not one of the forms above (a plain const, a cast, a sparse or vector-palette form).
// Parameters are validated exactly as the op's kernel validates them.
Result<std::optional<WeightCodes>> weight_codes(const Shard& shard, const Function& function,
                                                std::string_view value_name);

}  // namespace sg
