// PLACEHOLDER: kernels of the "linear" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_einsum(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'einsum' is not implemented yet"); }
Status op_linear(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'linear' is not implemented yet"); }
Status op_matmul(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'matmul' is not implemented yet"); }

}  // namespace sg
