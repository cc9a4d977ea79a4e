// PLACEHOLDER: kernels of the "elementwise_binary" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_add(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'add' is not implemented yet"); }
Status op_equal(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'equal' is not implemented yet"); }
Status op_floor_div(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'floor_div' is not implemented yet"); }
Status op_greater(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'greater' is not implemented yet"); }
Status op_greater_equal(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'greater_equal' is not implemented yet"); }
Status op_less(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'less' is not implemented yet"); }
Status op_less_equal(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'less_equal' is not implemented yet"); }
Status op_logical_and(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'logical_and' is not implemented yet"); }
Status op_logical_or(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'logical_or' is not implemented yet"); }
Status op_logical_xor(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'logical_xor' is not implemented yet"); }
Status op_maximum(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'maximum' is not implemented yet"); }
Status op_minimum(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'minimum' is not implemented yet"); }
Status op_mod(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'mod' is not implemented yet"); }
Status op_mul(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'mul' is not implemented yet"); }
Status op_not_equal(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'not_equal' is not implemented yet"); }
Status op_pow(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'pow' is not implemented yet"); }
Status op_real_div(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'real_div' is not implemented yet"); }
Status op_sub(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sub' is not implemented yet"); }

}  // namespace sg
