// Kernels of the "control_flow" family: cond and while_loop (runtime/ops/README.md, Control flow).
// The bodies are nested blocks of the op; the kernel decides which block runs how often and the
// executor runs it (OpContext::run_block), so the blocks' ops go through the same kernels, fp16
// storage and non-finite checks as every other op.
#include "ops/kernels.h"

#include <cstdint>
#include <vector>

namespace sg {
namespace {

// A loop that has not ended after this many iterations is reported instead of hanging the
// validator: no shard loops this long on purpose.
constexpr int64_t kMaxLoopIterations = 100000;

// The limit counts the iterations of the outermost loop running on this thread together with
// those of every loop nested in it. A limit per loop alone lets nested loops multiply: a loop
// that never ends around one of 1000 iterations would run 10^8 iterations (hours) before its
// own count reached the limit.
thread_local int64_t t_loop_depth = 0;
thread_local int64_t t_loop_iterations = 0;

struct LoopNesting {
  LoopNesting() {
    if (t_loop_depth++ == 0) t_loop_iterations = 0;
  }
  ~LoopNesting() { --t_loop_depth; }
  LoopNesting(const LoopNesting&) = delete;
  LoopNesting& operator=(const LoopNesting&) = delete;
};

Result<bool> truth(OpContext& ctx, const Tensor& t, const char* what) {
  SG_OP_CHECK(ctx, t.numel() == 1 && t.dtype() != DType::kString, ErrorCode::kShape,
              "{} must be one bool, got {} {}", what, dtype_name(t.dtype()), shape_str(t.shape()));
  return element_as_double(t, 0) != 0.0;
}

Status check_blocks(OpContext& ctx, size_t want, const char* names) {
  SG_OP_CHECK(ctx, ctx.op().blocks.size() == want, ErrorCode::kFormat,
              "{} needs {} nested blocks ({}), the program gives {}", ctx.op().type, want, names,
              ctx.op().blocks.size());
  return Status::ok();
}

Status set_outputs(OpContext& ctx, std::vector<Tensor> values, const char* from) {
  SG_OP_CHECK(ctx, values.size() == ctx.num_outputs(), ErrorCode::kShape,
              "{} returns {} values, the op declares {} outputs", from, values.size(),
              ctx.num_outputs());
  for (size_t i = 0; i < values.size(); ++i) ctx.set_output(i, std::move(values[i]));
  return Status::ok();
}

}  // namespace

Status op_cond(OpContext& ctx) {
  SG_TRY(check_blocks(ctx, 2, "true branch, false branch"));
  SG_ASSIGN_OR_RETURN(Tensor pred, ctx.get("pred"));
  SG_ASSIGN_OR_RETURN(bool p, truth(ctx, pred, "pred"));
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> out, ctx.run_block(p ? 0 : 1, {}));
  return set_outputs(ctx, std::move(out), p ? "the true branch" : "the false branch");
}

Status op_while_loop(OpContext& ctx) {
  SG_TRY(check_blocks(ctx, 2, "condition, body"));
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> vars, ctx.get_all("loop_vars"));
  const LoopNesting nesting;
  for (;;) {
    SG_OP_CHECK(ctx, t_loop_iterations < kMaxLoopIterations, ErrorCode::kUnsupported,
                "the loop has not ended after {} iterations (nested loops count together)",
                kMaxLoopIterations);
    ++t_loop_iterations;
    SG_ASSIGN_OR_RETURN(std::vector<Tensor> c, ctx.run_block(0, vars));
    SG_OP_CHECK(ctx, c.size() == 1, ErrorCode::kShape,
                "the condition block returns {} values, expected one bool", c.size());
    SG_ASSIGN_OR_RETURN(bool go_on, truth(ctx, c[0], "the condition block's output"));
    if (!go_on) break;
    SG_ASSIGN_OR_RETURN(std::vector<Tensor> next, ctx.run_block(1, vars));
    SG_OP_CHECK(ctx, next.size() == vars.size(), ErrorCode::kShape,
                "the body returns {} values for {} loop variables", next.size(), vars.size());
    vars = std::move(next);
  }
  return set_outputs(ctx, std::move(vars), "the loop");
}

}  // namespace sg
