// PLACEHOLDER: kernels of the "softmax" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_softmax(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'softmax' is not implemented yet"); }

}  // namespace sg
