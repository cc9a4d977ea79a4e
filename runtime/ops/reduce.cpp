// PLACEHOLDER: kernels of the "reduce" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_reduce_argmax(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_argmax' is not implemented yet"); }
Status op_reduce_argmin(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_argmin' is not implemented yet"); }
Status op_reduce_l1_norm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_l1_norm' is not implemented yet"); }
Status op_reduce_l2_norm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_l2_norm' is not implemented yet"); }
Status op_reduce_log_sum(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_log_sum' is not implemented yet"); }
Status op_reduce_log_sum_exp(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_log_sum_exp' is not implemented yet"); }
Status op_reduce_max(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_max' is not implemented yet"); }
Status op_reduce_mean(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_mean' is not implemented yet"); }
Status op_reduce_min(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_min' is not implemented yet"); }
Status op_reduce_prod(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_prod' is not implemented yet"); }
Status op_reduce_sum(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_sum' is not implemented yet"); }
Status op_reduce_sum_square(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'reduce_sum_square' is not implemented yet"); }

}  // namespace sg
