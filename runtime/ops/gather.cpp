// Kernels of the "gather" family (runtime/ops/README.md, Shape and data movement): gather,
// gather_along_axis, gather_nd, one_hot. Elements are moved in their stored dtype (fp16 stays fp16
// bits, ints stay ints). An embedding lookup (gather along axis 0 of a compressed table) decodes
// only the rows it reads: a palettized vocabulary table is never expanded.
//
// Negative indices: iOS15/16 wrap them (−1 is the last element); from iOS17 on a negative
// index counts as out of range. An out-of-range index is always reported as an error naming
// the index and its position, so a bad index never reads outside the tensor.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cstring>
#include <unordered_map>
#include <vector>

namespace sg {
namespace {

// True when the function's opset wraps negative indices (iOS15/16).
bool wraps_negative(const OpContext& ctx) { return kern::opset_version(ctx) < 17; }

Result<std::vector<int64_t>> read_indices(OpContext& ctx, const Tensor& indices) {
  SG_OP_CHECK(ctx, kern::is_intlike(indices) && indices.dtype() != DType::kBool, ErrorCode::kShape,
              "indices must be an integer tensor, got {}", dtype_name(indices.dtype()));
  return kern::as_int64(indices);
}

// Resolves index `v` (found at flat position `pos` of the indices) into [0, dim).
Result<int64_t> resolve_index(OpContext& ctx, int64_t v, int64_t dim, bool wrap, int64_t pos) {
  if (v < 0 && wrap) v += dim;
  if (v < 0 || v >= dim) {
    return ctx.error(ErrorCode::kShape,
                     fmt::format("index {} at flat position {} of indices is out of range for a "
                                 "dimension of size {}{}",
                                 v, pos, dim,
                                 wrap ? "" : " (negative indices are out of range from iOS17 on)"));
  }
  return v;
}

// gather(x = table, axis = 0) with a compressed table: each looked-up row is decoded
// straight into the output.
Status gather_table_rows(OpContext& ctx, const StreamedWeight& table, const Tensor& indices) {
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, indices));
  const bool wrap = wraps_negative(ctx);
  const int64_t n = table.shape[0];
  const int64_t row = n > 0 ? numel(table.shape) / n : 0;
  Shape out_shape = indices.shape();
  out_shape.insert(out_shape.end(), table.shape.begin() + 1, table.shape.end());
  SG_ASSIGN_OR_RETURN(int64_t total, checked_numel(out_shape));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, table.dtype, out_shape));
  const size_t row_bytes = static_cast<size_t>(row * dtype_bits(table.dtype) / 8);
  // A row looked up again (a repeated token) is copied from its first decode: no part of a
  // weight is decoded twice in a run (runtime/exec/weight_plan.h).
  std::unordered_map<int64_t, size_t> first_at;
  for (size_t pos = 0; pos < idx.size() && total > 0; ++pos) {
    SG_ASSIGN_OR_RETURN(int64_t k, resolve_index(ctx, idx[pos], n, wrap, static_cast<int64_t>(pos)));
    std::byte* dst = out.mutable_raw() + pos * row_bytes;
    auto [it, fresh] = first_at.try_emplace(k, pos);
    if (fresh) {
      table.decode(k * row, row, dst);
    } else {
      std::memcpy(dst, out.raw() + it->second * row_bytes, row_bytes);
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace

Status op_gather(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", 0));
  SG_ASSIGN_OR_RETURN(int64_t batch_dims, ctx.get_int_or("batch_dims", 0));
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  if (axis_in == 0 && batch_dims == 0) {
    // A table of rank >= 2: each looked-up row is a run of whole last-dim rows.
    SG_ASSIGN_OR_RETURN(std::optional<StreamedWeight> table, ctx.get_streamed("x", {.min = 2}));
    if (table.has_value()) return gather_table_rows(ctx, *table, indices);
  }
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, x.rank(), "axis"));
  if (batch_dims < 0) batch_dims += indices.rank();
  SG_OP_CHECK(ctx, batch_dims >= 0 && batch_dims <= axis && batch_dims <= indices.rank(),
              ErrorCode::kShape, "batch_dims {} must be in [0, min(axis={}, rank(indices)={})]",
              batch_dims, axis, indices.rank());
  for (int64_t d = 0; d < batch_dims; ++d) {
    SG_OP_CHECK(ctx, x.dim(d) == indices.dim(d), ErrorCode::kShape,
                "batch dim {} differs: x {} vs indices {}", d, shape_str(x.shape()),
                shape_str(indices.shape()));
  }
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, indices));
  const bool wrap = wraps_negative(ctx);

  // out = x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:]
  Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape().begin() + batch_dims, indices.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  SG_ASSIGN_OR_RETURN(int64_t total, checked_numel(out_shape));

  int64_t batch = 1, pre = 1, post = 1, ipart = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batch *= x.dim(d);
  for (int64_t d = batch_dims; d < axis; ++d) pre *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) post *= x.dim(d);
  for (int64_t d = batch_dims; d < indices.rank(); ++d) ipart *= indices.dim(d);
  const int64_t n = x.dim(axis);
  std::vector<int64_t> src(static_cast<size_t>(total));
  size_t o = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t p = 0; p < pre; ++p) {
      for (int64_t i = 0; i < ipart; ++i) {
        const int64_t pos = b * ipart + i;
        SG_ASSIGN_OR_RETURN(int64_t k, resolve_index(ctx, idx[static_cast<size_t>(pos)], n, wrap, pos));
        const int64_t base = ((b * pre + p) * n + k) * post;
        for (int64_t q = 0; q < post; ++q) src[o++] = base + q;
      }
    }
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::gather_elements(ctx, x, out_shape, src));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_gather_along_axis(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", 0));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, x.rank(), "axis"));
  SG_OP_CHECK(ctx, indices.rank() == x.rank(), ErrorCode::kShape,
              "indices {} must have the rank of x {}", shape_str(indices.shape()),
              shape_str(x.shape()));
  for (int64_t d = 0; d < x.rank(); ++d) {
    SG_OP_CHECK(ctx, d == axis || indices.dim(d) == x.dim(d), ErrorCode::kShape,
                "indices {} and x {} differ on dim {} (only axis {} may differ)",
                shape_str(indices.shape()), shape_str(x.shape()), d, axis);
  }
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, indices));
  const bool wrap = wraps_negative(ctx);
  int64_t pre = 1, post = 1;
  for (int64_t d = 0; d < axis; ++d) pre *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) post *= x.dim(d);
  const int64_t n = x.dim(axis), m = indices.dim(axis);
  std::vector<int64_t> src(idx.size());
  for (int64_t p = 0; p < pre; ++p) {
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t q = 0; q < post; ++q) {
        const int64_t pos = (p * m + j) * post + q;
        SG_ASSIGN_OR_RETURN(int64_t k, resolve_index(ctx, idx[static_cast<size_t>(pos)], n, wrap, pos));
        src[static_cast<size_t>(pos)] = (p * n + k) * post + q;
      }
    }
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::gather_elements(ctx, x, indices.shape(), src));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_gather_nd(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(int64_t batch_dims, ctx.get_int_or("batch_dims", 0));
  SG_OP_CHECK(ctx, indices.rank() >= 1, ErrorCode::kShape, "indices must have rank >= 1");
  const int64_t K = indices.dim(indices.rank() - 1);
  SG_OP_CHECK(ctx, batch_dims >= 0 && batch_dims < indices.rank() && batch_dims + K <= x.rank(),
              ErrorCode::kShape,
              "indices {} (K={}) with batch_dims {} do not fit x {}", shape_str(indices.shape()), K,
              batch_dims, shape_str(x.shape()));
  for (int64_t d = 0; d < batch_dims; ++d) {
    SG_OP_CHECK(ctx, x.dim(d) == indices.dim(d), ErrorCode::kShape,
                "batch dim {} differs: x {} vs indices {}", d, shape_str(x.shape()),
                shape_str(indices.shape()));
  }
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, indices));
  const bool wrap = wraps_negative(ctx);
  // out = indices.shape[:-1] + x.shape[batch_dims + K:]
  Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
  out_shape.insert(out_shape.end(), x.shape().begin() + batch_dims + K, x.shape().end());
  SG_ASSIGN_OR_RETURN(int64_t total, checked_numel(out_shape));
  int64_t batch = 1, tuples = 1, post = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batch *= x.dim(d);
  for (int64_t d = batch_dims; d + 1 < indices.rank(); ++d) tuples *= indices.dim(d);
  for (int64_t d = batch_dims + K; d < x.rank(); ++d) post *= x.dim(d);
  int64_t per_batch = 1;  // elements of x per batch entry
  for (int64_t d = batch_dims; d < x.rank(); ++d) per_batch *= x.dim(d);
  std::vector<int64_t> src(static_cast<size_t>(total));
  size_t o = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t pos = (b * tuples + t) * K + k;
        const int64_t dim = x.dim(batch_dims + k);
        SG_ASSIGN_OR_RETURN(int64_t v, resolve_index(ctx, idx[static_cast<size_t>(pos)], dim, wrap, pos));
        off = off * dim + v;
      }
      const int64_t base = b * per_batch + off * post;
      for (int64_t q = 0; q < post; ++q) src[o++] = base + q;
    }
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::gather_elements(ctx, x, out_shape, src));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_one_hot(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(int64_t depth, ctx.get_int("one_hot_vector_size"));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", -1));
  SG_ASSIGN_OR_RETURN(double on, ctx.get_float_or("on_value", 1.0));
  SG_ASSIGN_OR_RETURN(double off, ctx.get_float_or("off_value", 0.0));
  SG_OP_CHECK(ctx, depth >= 0, ErrorCode::kShape, "one_hot_vector_size {} must be >= 0", depth);
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, indices.rank() + 1, "axis"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, indices));
  Shape out_shape = indices.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  int64_t pre = 1, post = 1;
  for (int64_t d = 0; d < axis; ++d) pre *= indices.dim(d);
  for (int64_t d = axis; d < indices.rank(); ++d) post *= indices.dim(d);
  float* o = out.mutable_data<float>();
  // An index outside [0, depth) gives a row of off_value (the TensorFlow rule the op follows).
  for (int64_t p = 0; p < pre; ++p) {
    for (int64_t k = 0; k < depth; ++k) {
      for (int64_t q = 0; q < post; ++q) {
        const int64_t v = idx[static_cast<size_t>(p * post + q)];
        o[(p * depth + k) * post + q] = static_cast<float>(v == k ? on : off);
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
