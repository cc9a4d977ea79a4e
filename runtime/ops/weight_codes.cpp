// WeightCodes (shardgate/weight_codes.h): reading one code of a decoded code block. The codes
// themselves come from the weight-format table's `codes` column (weight_formats.def).
#include "shardgate/weight_codes.h"

#include "core/subbyte.h"

namespace sg {

int64_t WeightCodes::group_count() const {
  int64_t n = 1;
  for (int64_t g : group_shape) n *= g;
  return n;
}

int64_t WeightCodes::code_at(int64_t e) const {
  if (bits == 8) {
    const auto byte = static_cast<uint8_t>(codes.raw()[e]);
    return is_signed ? static_cast<int8_t>(byte) : byte;
  }
  const uint32_t v = subbyte::get(codes.raw(), bits, e);
  if (is_signed && (v >> (bits - 1)) != 0) return static_cast<int64_t>(v) - (int64_t{1} << bits);
  return v;
}

}  // namespace sg
