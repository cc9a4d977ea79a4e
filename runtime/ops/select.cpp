// PLACEHOLDER: kernels of the "select" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_select(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'select' is not implemented yet"); }

}  // namespace sg
