// Compressed weights consumed in place. For the constexpr forms that hold a weight as packed
// codes plus a small table or scales (constexpr_lut_to_dense in its iOS16 and scalar iOS18
// forms, constexpr_blockwise_shift_scale, constexpr_affine_dequantize), the executor hands
// the weight-consuming kernel a StreamedWeight instead of the decoded tensor, and the kernel
// decodes block by block (linear_kernel.h). The op kernels themselves decode through the same
// range decoders, so a streamed weight is bit-identical to the materialised one.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/tensor.h"
#include "shardgate/weight_codes.h"

#include <optional>

namespace sg {

// `producer` is the context of the compile-time op that computes the weight. Finds its format
// in the weight-format table (weight_formats.def) and calls the row's range decoder, which
// validates the parameters exactly as the op's kernel does (so a bad weight fails the same
// way); nullopt when the format has none (const, casts, sparse and vector-LUT forms): the
// caller then decodes it as a whole.
Result<std::optional<StreamedWeight>> stream_constexpr(OpContext& producer);

// The codes behind the same forms (weight_codes.h, the table's `codes` column), for the weight
// diagnostics; nullopt for the forms without one code per element.
Result<std::optional<WeightCodes>> codes_constexpr(OpContext& producer);

}  // namespace sg
