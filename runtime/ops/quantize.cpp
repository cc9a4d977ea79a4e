// PLACEHOLDER: kernels of the "quantize" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_dequantize(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'dequantize' is not implemented yet"); }
Status op_quantize(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'quantize' is not implemented yet"); }

}  // namespace sg
