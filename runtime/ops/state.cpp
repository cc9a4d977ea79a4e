// Kernels of the "state" family (runtime/ops/README.md, Attention and state; iOS18): read_state,
// write_state and slice_update, the three ops of the KV-cache pattern read_state → slice_update →
// write_state. State buffers live in the executor's StateStore; these kernels only go through
// OpContext.
#include "ops/kernel_util.h"
#include "ops/slice_index.h"
#include "ops/kernels.h"

#include <cstring>

namespace sg {

Status op_read_state(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor value, ctx.read_state("input"));
  ctx.set_output(0, std::move(value));
  return Status::ok();
}

Status op_write_state(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor data, ctx.get("data"));
  return ctx.write_state("input", std::move(data));
}

Status op_slice_update(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(Tensor update, ctx.get("update"));
  SG_ASSIGN_OR_RETURN(std::vector<kern::DimSlice> dims, kern::resolve_slice_by_index(ctx, x.shape()));
  const std::vector<int64_t> offs = kern::slice_offsets(x.shape(), dims);
  Shape slice_shape;
  for (const auto& d : dims) {
    if (!d.squeeze) slice_shape.push_back(d.count);
  }
  SG_OP_CHECK(ctx, update.rank() >= 1 && update.numel() == static_cast<int64_t>(offs.size()),
              ErrorCode::kShape, "update {} does not fill the slice {} of x {}",
              shape_str(update.shape()), shape_str(slice_shape), shape_str(x.shape()));
  const size_t es = kern::element_size(x.dtype());
  SG_OP_CHECK(ctx, es > 0, ErrorCode::kUnsupported, "slice_update on dtype {} is not supported",
              dtype_name(x.dtype()));
  if (update.dtype() != x.dtype()) {
    // Mixed storage (an fp16 update into an fp32-held value, or the reverse) meets in x's dtype.
    auto cast = cast_tensor(update, x.dtype());
    if (!cast.is_ok()) return ctx.error(cast.status().code(), cast.status().message());
    update = std::move(cast).value();
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, x.dtype(), x.shape()));
  std::memcpy(out.mutable_raw(), x.raw(), x.nbytes());
  std::byte* dst = out.mutable_raw();
  const std::byte* src = update.raw();
  for (size_t i = 0; i < offs.size(); ++i) {
    std::memcpy(dst + static_cast<size_t>(offs[i]) * es, src + i * es, es);
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
