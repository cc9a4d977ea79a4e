// PLACEHOLDER: kernels of the "elementwise_unary" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_abs(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'abs' is not implemented yet"); }
Status op_acos(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'acos' is not implemented yet"); }
Status op_asin(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'asin' is not implemented yet"); }
Status op_atan(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'atan' is not implemented yet"); }
Status op_atanh(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'atanh' is not implemented yet"); }
Status op_ceil(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'ceil' is not implemented yet"); }
Status op_cos(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'cos' is not implemented yet"); }
Status op_cosh(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'cosh' is not implemented yet"); }
Status op_erf(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'erf' is not implemented yet"); }
Status op_exp(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'exp' is not implemented yet"); }
Status op_exp2(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'exp2' is not implemented yet"); }
Status op_floor(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'floor' is not implemented yet"); }
Status op_inverse(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'inverse' is not implemented yet"); }
Status op_log(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'log' is not implemented yet"); }
Status op_logical_not(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'logical_not' is not implemented yet"); }
Status op_round(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'round' is not implemented yet"); }
Status op_rsqrt(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'rsqrt' is not implemented yet"); }
Status op_sign(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sign' is not implemented yet"); }
Status op_sin(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sin' is not implemented yet"); }
Status op_sinh(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sinh' is not implemented yet"); }
Status op_sqrt(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sqrt' is not implemented yet"); }
Status op_square(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'square' is not implemented yet"); }
Status op_tan(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'tan' is not implemented yet"); }
Status op_tanh(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'tanh' is not implemented yet"); }

}  // namespace sg
