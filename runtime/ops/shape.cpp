// PLACEHOLDER: kernels of the "shape" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_band_part(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'band_part' is not implemented yet"); }
Status op_cast(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'cast' is not implemented yet"); }
Status op_concat(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'concat' is not implemented yet"); }
Status op_cumsum(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'cumsum' is not implemented yet"); }
Status op_expand_dims(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'expand_dims' is not implemented yet"); }
Status op_fill(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'fill' is not implemented yet"); }
Status op_fill_like(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'fill_like' is not implemented yet"); }
Status op_flatten2d(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'flatten2d' is not implemented yet"); }
Status op_identity(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'identity' is not implemented yet"); }
Status op_pad(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'pad' is not implemented yet"); }
Status op_range_1d(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'range_1d' is not implemented yet"); }
Status op_reshape(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reshape' is not implemented yet"); }
Status op_reverse(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reverse' is not implemented yet"); }
Status op_shape(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'shape' is not implemented yet"); }
Status op_slice_by_index(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'slice_by_index' is not implemented yet"); }
Status op_slice_by_size(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'slice_by_size' is not implemented yet"); }
Status op_split(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'split' is not implemented yet"); }
Status op_squeeze(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'squeeze' is not implemented yet"); }
Status op_stack(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'stack' is not implemented yet"); }
Status op_tile(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'tile' is not implemented yet"); }
Status op_transpose(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'transpose' is not implemented yet"); }

}  // namespace sg
