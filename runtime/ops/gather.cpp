// PLACEHOLDER: kernels of the "gather" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_gather(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'gather' is not implemented yet"); }
Status op_gather_along_axis(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'gather_along_axis' is not implemented yet"); }
Status op_gather_nd(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'gather_nd' is not implemented yet"); }
Status op_one_hot(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'one_hot' is not implemented yet"); }

}  // namespace sg
