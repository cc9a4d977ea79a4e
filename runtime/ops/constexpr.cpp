// PLACEHOLDER: kernels of the "constexpr" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_const(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'const' is not implemented yet"); }
Status op_constexpr_affine_dequantize(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_affine_dequantize' is not implemented yet"); }
Status op_constexpr_blockwise_shift_scale(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_blockwise_shift_scale' is not implemented yet"); }
Status op_constexpr_cast(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_cast' is not implemented yet"); }
Status op_constexpr_lut_to_dense(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_lut_to_dense' is not implemented yet"); }
Status op_constexpr_lut_to_sparse(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_lut_to_sparse' is not implemented yet"); }
Status op_constexpr_sparse_blockwise_shift_scale(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_sparse_blockwise_shift_scale' is not implemented yet"); }
Status op_constexpr_sparse_to_dense(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'constexpr_sparse_to_dense' is not implemented yet"); }

}  // namespace sg
