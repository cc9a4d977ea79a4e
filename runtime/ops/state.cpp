// PLACEHOLDER: kernels of the "state" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_read_state(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'read_state' is not implemented yet"); }
Status op_slice_update(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'slice_update' is not implemented yet"); }
Status op_write_state(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'write_state' is not implemented yet"); }

}  // namespace sg
