// Scatter ops (coremltools 9.0 iOS15/iOS17 scatter_gather.py): scatter (whole slices along an
// axis at 1-D indices), scatter_along_axis (element-wise, indices shaped like updates),
// scatter_nd (index tuples in the last dim of indices). The output starts as a copy of data;
// updates are applied one after another in index order (so with repeated indices `update`
// keeps the last one and `add` sums them) with mode update / add / sub / mul / div / max / min
// (default add, as coremltools' default_inputs says). Indices below 0 count from the end
// before iOS17; from iOS17 on they are out of range. An out-of-range index is always an error:
// iOS17 calls the result undefined when validate_indices is false, and a gate must not pass on
// an undefined value. Math is in double; integer data is truncated back (div toward zero).
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>

namespace sg {
namespace {

enum class Mode { kUpdate, kAdd, kSub, kMul, kDiv, kMax, kMin };

Result<Mode> read_mode(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::string m, ctx.get_string_or("mode", "add"));
  if (m == "update") return Mode::kUpdate;
  if (m == "add") return Mode::kAdd;
  if (m == "sub") return Mode::kSub;
  if (m == "mul") return Mode::kMul;
  if (m == "div") return Mode::kDiv;
  if (m == "max") return Mode::kMax;
  if (m == "min") return Mode::kMin;
  return ctx.error(ErrorCode::kShape,
                   fmt::format("mode '{}' is not one of update, add, sub, mul, div, max, min", m));
}

double combine(Mode m, double old, double u) {
  switch (m) {
    case Mode::kUpdate: return u;
    case Mode::kAdd: return old + u;
    case Mode::kSub: return old - u;
    case Mode::kMul: return old * u;
    case Mode::kDiv: return old / u;
    case Mode::kMax: return std::isnan(old) || std::isnan(u) ? NAN : std::max(old, u);
    case Mode::kMin: return std::isnan(old) || std::isnan(u) ? NAN : std::min(old, u);
  }
  return u;
}

struct ScatterOperands {
  Tensor data, updates;
  std::vector<int64_t> indices;
  Shape indices_shape;
  std::vector<double> out;  // data as doubles, updated in place
  Mode mode = Mode::kAdd;
};

Result<ScatterOperands> read_operands(OpContext& ctx) {
  ScatterOperands o;
  SG_ASSIGN_OR_RETURN(o.data, ctx.get("data"));
  SG_ASSIGN_OR_RETURN(o.updates, ctx.get("updates"));
  SG_ASSIGN_OR_RETURN(Tensor idx, ctx.get("indices"));
  SG_OP_CHECK(ctx, dtype_is_integer(idx.dtype()), ErrorCode::kShape, "indices must be integers, not {}",
              dtype_name(idx.dtype()));
  SG_OP_CHECK(ctx, (kern::is_float(o.data) || dtype_is_integer(o.data.dtype())) &&
                       (kern::is_float(o.updates) || dtype_is_integer(o.updates.dtype())),
              ErrorCode::kShape, "data ({}) and updates ({}) must be numeric", dtype_name(o.data.dtype()),
              dtype_name(o.updates.dtype()));
  SG_ASSIGN_OR_RETURN(o.indices, to_int64_vector(idx));
  o.indices_shape = idx.shape();
  SG_ASSIGN_OR_RETURN(o.out, to_double_vector(o.data));
  SG_ASSIGN_OR_RETURN(o.mode, read_mode(ctx));
  return o;
}

// An index into a dim of `size`: negative counts from the end before iOS17.
Result<int64_t> resolve_index(const OpContext& ctx, int64_t i, int64_t size, size_t at) {
  int64_t k = i;
  if (k < 0 && kern::opset_version(ctx) < 17) k += size;
  SG_OP_CHECK(ctx, k >= 0 && k < size, ErrorCode::kShape,
              "indices[{}] = {} is out of range for a dim of size {}{}", at, i, size,
              i < 0 ? " (negative indices are out of range from iOS17 on)" : "");
  return k;
}

Status finish(OpContext& ctx, const ScatterOperands& o) {
  if (kern::is_float(o.data)) {
    SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, o.data.shape()));
    float* p = out.mutable_data<float>();
    for (size_t i = 0; i < o.out.size(); ++i) p[i] = static_cast<float>(o.out[i]);
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  std::vector<int64_t> v(o.out.size());
  for (size_t i = 0; i < o.out.size(); ++i) v[i] = kern::saturate_i64(o.out[i]);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::int32_tensor(ctx, o.data.shape(), v));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace

Status op_scatter(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(ScatterOperands o, read_operands(ctx));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", 0));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, o.data.rank(), "axis"));
  SG_OP_CHECK(ctx, o.indices_shape.size() == 1, ErrorCode::kShape, "indices has shape {}, expected 1-D",
              shape_str(o.indices_shape));
  Shape want = o.data.shape();
  want[static_cast<size_t>(axis)] = o.indices_shape[0];
  SG_OP_CHECK(ctx, o.updates.shape() == want, ErrorCode::kShape,
              "updates has shape {}, expected {} (data {} with indices along axis {})",
              shape_str(o.updates.shape()), shape_str(want), shape_str(o.data.shape()), axis);
  SG_ASSIGN_OR_RETURN(std::vector<double> upd, to_double_vector(o.updates));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= o.data.dim(d);
  for (int64_t d = axis + 1; d < o.data.rank(); ++d) inner *= o.data.dim(d);
  const int64_t len = o.data.dim(axis), n = o.indices_shape[0];
  for (int64_t i = 0; i < n; ++i) {
    SG_ASSIGN_OR_RETURN(int64_t k, resolve_index(ctx, o.indices[static_cast<size_t>(i)], len,
                                                 static_cast<size_t>(i)));
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        double& dst = o.out[static_cast<size_t>((a * len + k) * inner + b)];
        dst = combine(o.mode, dst, upd[static_cast<size_t>((a * n + i) * inner + b)]);
      }
    }
  }
  return finish(ctx, o);
}

Status op_scatter_along_axis(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(ScatterOperands o, read_operands(ctx));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", 0));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, o.data.rank(), "axis"));
  SG_OP_CHECK(ctx, o.updates.shape() == o.indices_shape, ErrorCode::kShape,
              "updates {} and indices {} must have the same shape", shape_str(o.updates.shape()),
              shape_str(o.indices_shape));
  SG_OP_CHECK(ctx, static_cast<int64_t>(o.indices_shape.size()) == o.data.rank(), ErrorCode::kShape,
              "indices has shape {}, needs the rank of data {}", shape_str(o.indices_shape),
              shape_str(o.data.shape()));
  for (int64_t d = 0; d < o.data.rank(); ++d) {
    SG_OP_CHECK(ctx, d == axis || o.indices_shape[static_cast<size_t>(d)] == o.data.dim(d),
                ErrorCode::kShape, "indices {} and data {} differ outside axis {}",
                shape_str(o.indices_shape), shape_str(o.data.shape()), axis);
  }
  SG_ASSIGN_OR_RETURN(std::vector<double> upd, to_double_vector(o.updates));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= o.data.dim(d);
  for (int64_t d = axis + 1; d < o.data.rank(); ++d) inner *= o.data.dim(d);
  const int64_t len = o.data.dim(axis), n = o.indices_shape[static_cast<size_t>(axis)];
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t b = 0; b < inner; ++b) {
        const auto src = static_cast<size_t>((a * n + i) * inner + b);
        SG_ASSIGN_OR_RETURN(int64_t k, resolve_index(ctx, o.indices[src], len, src));
        double& dst = o.out[static_cast<size_t>((a * len + k) * inner + b)];
        dst = combine(o.mode, dst, upd[src]);
      }
    }
  }
  return finish(ctx, o);
}

Status op_scatter_nd(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(ScatterOperands o, read_operands(ctx));
  SG_OP_CHECK(ctx, !o.indices_shape.empty(), ErrorCode::kShape, "indices is a scalar: needs [..., K]");
  const int64_t depth = o.indices_shape.back();
  SG_OP_CHECK(ctx, depth >= 1 && depth <= o.data.rank(), ErrorCode::kShape,
              "indices has shape {}: its last dim must be in [1, rank of data {}]",
              shape_str(o.indices_shape), o.data.rank());
  Shape want(o.indices_shape.begin(), o.indices_shape.end() - 1);
  for (int64_t d = depth; d < o.data.rank(); ++d) want.push_back(o.data.dim(d));
  SG_OP_CHECK(ctx, o.updates.shape() == want, ErrorCode::kShape,
              "updates has shape {}, expected {} (indices {} into data {})", shape_str(o.updates.shape()),
              shape_str(want), shape_str(o.indices_shape), shape_str(o.data.shape()));
  SG_ASSIGN_OR_RETURN(std::vector<double> upd, to_double_vector(o.updates));
  const std::vector<int64_t> st = kern::strides_of(o.data.shape());
  int64_t slice = 1;
  for (int64_t d = depth; d < o.data.rank(); ++d) slice *= o.data.dim(d);
  const int64_t tuples = depth == 0 ? 0 : static_cast<int64_t>(o.indices.size()) / depth;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (int64_t d = 0; d < depth; ++d) {
      const auto at = static_cast<size_t>(t * depth + d);
      SG_ASSIGN_OR_RETURN(int64_t k, resolve_index(ctx, o.indices[at], o.data.dim(d), at));
      base += k * st[static_cast<size_t>(d)];
    }
    for (int64_t e = 0; e < slice; ++e) {
      double& dst = o.out[static_cast<size_t>(base + e)];
      dst = combine(o.mode, dst, upd[static_cast<size_t>(t * slice + e)]);
    }
  }
  return finish(ctx, o);
}

}  // namespace sg
