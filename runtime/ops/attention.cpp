// PLACEHOLDER: kernels of the "attention" family, to be implemented.
#include "shardgate/ops.h"

namespace sg {

Status op_scaled_dot_product_attention(OpContext& ctx) { return ctx.error(ErrorCode::kUnsupported, "op 'scaled_dot_product_attention' is not implemented yet"); }

}  // namespace sg
