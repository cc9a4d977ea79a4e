// PLACEHOLDER: kernels of the "recurrent" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_lstm(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'lstm' is not implemented yet"); }

}  // namespace sg
