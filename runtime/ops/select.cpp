// select(cond, a, b): cond ? a : b with three-way numpy broadcasting. Operands of one dtype
// are moved as stored bytes (fp16 stays fp16 bits); mixed dtypes are computed in fp32.
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cstring>

namespace sg {

Status op_select(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor cond, ctx.get("cond"));
  SG_ASSIGN_OR_RETURN(Tensor a, ctx.get("a"));
  SG_ASSIGN_OR_RETURN(Tensor b, ctx.get("b"));
  SG_OP_CHECK(ctx, cond.dtype() != DType::kString, ErrorCode::kShape,
              "select: cond must be bool or numeric, got string");
  SG_ASSIGN_OR_RETURN(Shape out_shape, kern::broadcast_shapes(ctx, {cond.shape(), a.shape(), b.shape()}));
  if (a.dtype() != b.dtype()) {
    SG_OP_CHECK(ctx, a.dtype() != DType::kString && b.dtype() != DType::kString,
                ErrorCode::kShape, "select: a ({}) and b ({}) differ in dtype",
                dtype_name(a.dtype()), dtype_name(b.dtype()));
    SG_ASSIGN_OR_RETURN(a, to_f32(a));
    SG_ASSIGN_OR_RETURN(b, to_f32(b));
  }
  const size_t es = kern::element_size(a.dtype());
  SG_OP_CHECK(ctx, es > 0, ErrorCode::kUnsupported, "select: cannot move elements of dtype {}",
              dtype_name(a.dtype()));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, a.dtype(), out_shape));
  std::byte* d = out.mutable_raw();
  const std::byte* pa = a.raw();
  const std::byte* pb = b.raw();
  kern::broadcast_for_each<3>(out_shape, {&cond.shape(), &a.shape(), &b.shape()},
                              [&](int64_t i, const std::array<int64_t, 3>& k) {
                                const bool c = element_as_double(cond, k[0]) != 0;
                                const std::byte* src = c ? pa + k[1] * es : pb + k[2] * es;
                                std::memcpy(d + i * es, src, es);
                              });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// non_zero (coremltools iOS15 tensor_operation.py): the coordinates of every non-zero element
// of x in row-major order, as an int32 [count, rank] tensor (numpy's transpose(nonzero(x))).
// NaN is non-zero.
Status op_non_zero(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.rank() >= 1, ErrorCode::kShape, "x is a scalar: non_zero needs rank >= 1");
  SG_OP_CHECK(ctx, x.dtype() != DType::kString, ErrorCode::kShape, "x must be numeric or bool, not string");
  const std::vector<int64_t> st = kern::strides_of(x.shape());
  std::vector<int64_t> coords;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (element_as_double(x, i) == 0) continue;
    for (int64_t d = 0; d < x.rank(); ++d) coords.push_back((i / st[static_cast<size_t>(d)]) % x.dim(d));
  }
  const int64_t count = static_cast<int64_t>(coords.size()) / x.rank();
  SG_ASSIGN_OR_RETURN(Tensor out, kern::int32_tensor(ctx, {count, x.rank()}, coords));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
