// Kernel declarations, one per ops.def entry: Status op_<name>(OpContext&).
//
// Private to runtime/ops: the rest of the runtime reaches a kernel only through the op table
// (shardgate/ops.h: find_op(), all_ops()), so the op list has one owner and nothing above the
// ops layer depends on how kernels are named.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/status.h"

namespace sg {

#define SG_OP(name, family, op_class) Status op_##name(OpContext& ctx);
#include "ops/ops.def"
#undef SG_OP

}  // namespace sg
