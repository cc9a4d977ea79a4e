// PLACEHOLDER: kernels of the "conv" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_conv(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'conv' is not implemented yet"); }

}  // namespace sg
