// Elementwise maps shared by the unary and activation families: read `x` as fp32, apply a
// scalar function, hand the fp32 result to the executor (which stores it in the declared
// dtype). A costly stateless function of fp16 inputs (map_x_costly) is looked up in a table of
// its results once it has run on enough elements (ops/f16_table.h).
#pragma once

#include "ops/f16_table.h"
#include "ops/float_rows.h"
#include "ops/kernel_util.h"
#include "shardgate/op_context.h"

#include <type_traits>

namespace sg::kern {

// Lookup: f costs more than a table lookup (exp, erf, trig, silu, a division), so where x is fp16
// and f stateless its results come from f16_table once it has run on enough elements; cheap
// functions (abs, floor, a compare) are computed, which vectorises.
template <bool Lookup = false, typename F>
Status map_f32(OpContext& ctx, const char* input, F f) {
  static_assert(!Lookup || std::is_empty_v<F>, "looked-up functions are stateless (one table per function type)");
  SG_ASSIGN_OR_RETURN(Tensor in, ctx.get(input));
  if (float_rows_dtype(in.dtype())) {
    SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, DType::kF32, in.shape()));
    float* dst = out.mutable_data<float>();
    const float* table = nullptr;
    if constexpr (Lookup) {
      if (in.dtype() == DType::kF16) table = f16_table(f, in.numel());
    }
    if (table != nullptr) {
      const uint16_t* src = in.data<uint16_t>();
      for (int64_t i = 0, n = in.numel(); i < n; ++i) dst[i] = table[src[i]];
    } else {
      // fp16/fp32 x is read in place, a block at a time (ops/float_rows.h).
      float_rows_unary(in, dst, f);
    }
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

// map_x for a stateless f dearer than a table lookup (see map_f32's Lookup).
template <typename F>
Status map_x_costly(OpContext& ctx, F f) {
  return map_f32<true>(ctx, "x", f);
}

}  // namespace sg::kern
