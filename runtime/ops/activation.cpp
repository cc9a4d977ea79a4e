// PLACEHOLDER: kernels of the "activation" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_clamped_relu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'clamped_relu' is not implemented yet"); }
Status op_clip(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'clip' is not implemented yet"); }
Status op_elu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'elu' is not implemented yet"); }
Status op_gelu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'gelu' is not implemented yet"); }
Status op_leaky_relu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'leaky_relu' is not implemented yet"); }
Status op_relu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'relu' is not implemented yet"); }
Status op_relu6(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'relu6' is not implemented yet"); }
Status op_scaled_tanh(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'scaled_tanh' is not implemented yet"); }
Status op_sigmoid(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sigmoid' is not implemented yet"); }
Status op_sigmoid_hard(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'sigmoid_hard' is not implemented yet"); }
Status op_silu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'silu' is not implemented yet"); }
Status op_softplus(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'softplus' is not implemented yet"); }
Status op_softsign(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'softsign' is not implemented yet"); }
Status op_thresholded_relu(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'thresholded_relu' is not implemented yet"); }

}  // namespace sg
