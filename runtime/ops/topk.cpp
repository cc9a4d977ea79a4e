// PLACEHOLDER: kernels of the "topk" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_argsort(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'argsort' is not implemented yet"); }
Status op_topk(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'topk' is not implemented yet"); }

}  // namespace sg
