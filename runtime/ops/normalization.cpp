// PLACEHOLDER: kernels of the "normalization" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_batch_norm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'batch_norm' is not implemented yet"); }
Status op_instance_norm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'instance_norm' is not implemented yet"); }
Status op_l2_norm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'l2_norm' is not implemented yet"); }
Status op_layer_norm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'layer_norm' is not implemented yet"); }

}  // namespace sg
