// Elementwise maps shared by the unary and activation families: read `x` as fp32, apply a
// scalar function, hand the fp32 result to the executor (which stores it in the declared
// dtype).
#pragma once

#include "ops/float_rows.h"
#include "ops/kernel_util.h"
#include "shardgate/op_context.h"

namespace sg::kern {

template <typename F>
Status map_f32(OpContext& ctx, const char* input, F f) {
  SG_ASSIGN_OR_RETURN(Tensor in, ctx.get(input));
  if (float_rows_dtype(in.dtype())) {
    // fp16/fp32 x is read in place, a block at a time (ops/float_rows.h).
    SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, DType::kF32, in.shape()));
    float_rows_unary(in, out.mutable_data<float>(), f);
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32(input));
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, DType::kF32, x.shape()));
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) dst[i] = f(src[i]);
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

template <typename F>
Status map_x(OpContext& ctx, F f) {
  return map_f32(ctx, "x", f);
}

}  // namespace sg::kern
