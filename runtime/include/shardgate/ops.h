// The op table. runtime/ops/ops.def lists every MIL op the runtime knows, once; the registry,
// the README's op list (`golden-validator ops`) and the coverage test are derived from it.
// Kernels are reached only through this table; their declarations are private to runtime/ops
// (runtime/ops/kernels.h).
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/program.h"
#include "shardgate/status.h"

#include <map>
#include <span>
#include <string>
#include <string_view>

namespace sg {

using KernelFn = Status (*)(OpContext&);

enum class OpClass : uint8_t {
  kCompute,      // runs at inference time; counts for residency
  kCompileTime,  // const and constexpr_*: weight materialisation, never counts as fallback
};
const char* op_class_name(OpClass c);  // "compute" / "compile-time"

struct OpInfo {
  std::string_view name;    // MIL op type, e.g. "slice_by_index"
  std::string_view family;  // source file in runtime/ops/ that implements it, e.g. "shape"
  OpClass op_class;
  KernelFn kernel;
  // False for ops whose values a device will not reproduce (random_*: SG_OP_NONREPRODUCIBLE
  // in ops.def). Their outputs, and everything computed from them, prove nothing about
  // fidelity.
  bool reproducible_on_device = true;
};

// Every op, sorted by name.
std::span<const OpInfo> all_ops();
// nullptr when the runtime does not know the op.
const OpInfo* find_op(std::string_view type);
// False when outputs of this op type cannot be compared with a device's (random_*); true for
// every other op, known or not. Fidelity gates exclude outputs that depend on such an op.
bool op_reproducible_on_device(std::string_view type);
// The values of `fn` that depend on an op whose values a device does not reproduce, or on one
// of `tainted_inputs` (a function input fed by such a value upstream, e.g. in a chain), each
// with why, naming the op that started it: "random_normal op #3 'noise'" or the input's own
// reason. Data flow is followed through every op; a cond / while_loop whose nested blocks
// contain such an op or read such a value taints all its outputs (a loop carries it on).
// Function outputs are among the keys under their own names. Empty when every value is
// reproducible, which is the case for every model without random_* ops.
std::map<std::string, std::string> nonreproducible_values(
    const Function& fn, const std::map<std::string, std::string>& tainted_inputs = {});

// Class of any op type: const/constexpr_* are compile-time even when unknown to the table.
OpClass classify_op(std::string_view type);

// Runs op's kernel with ctx.threads() installed for parallel_for. Every caller (executor,
// weight materialisation, op test harness) goes through here, so a kernel never sets its own
// thread count and none can forget to.
Status run_kernel(const OpInfo& op, OpContext& ctx);

}  // namespace sg
