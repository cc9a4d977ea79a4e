// topk and argsort (runtime/ops/README.md, Shape and data movement). Ordering is stable: equal
// values keep their index order, which is what numpy's stable argsort (the reference) gives. NaN
// sorts after every number in both directions, as numpy's argsort(x) and argsort(−x) place it last.
// With sort=false the selection is still returned sorted: any order is allowed then, and sorted is
// deterministic.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace sg {
namespace {

// Sorted positions (0..n-1) of the n values `stride` apart starting at x.
void order_line(const float* x, int64_t n, int64_t stride, bool ascending, std::vector<int64_t>& ord) {
  ord.resize(static_cast<size_t>(n));
  std::iota(ord.begin(), ord.end(), int64_t{0});
  std::stable_sort(ord.begin(), ord.end(), [&](int64_t a, int64_t b) {
    const float va = x[a * stride], vb = x[b * stride];
    const bool na = std::isnan(va), nb = std::isnan(vb);
    if (na || nb) return !na && nb;
    return ascending ? va < vb : va > vb;
  });
}

struct Lines {
  int64_t outer = 1, n = 0, inner = 1;
};

Lines lines_of(const Shape& s, int64_t axis) {
  Lines l;
  for (int64_t d = 0; d < axis; ++d) l.outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) l.inner *= s[d];
  l.n = s[static_cast<size_t>(axis)];
  return l;
}

}  // namespace

Status op_topk(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(int64_t k, ctx.get_int_or("k", 1));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", -1));
  SG_ASSIGN_OR_RETURN(bool ascending, ctx.get_bool_or("ascending", false));
  SG_ASSIGN_OR_RETURN(bool return_indices, ctx.get_bool_or("return_indices", true));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, x.rank(), "axis"));
  const Lines l = lines_of(x.shape(), axis);
  if (k == -1) k = l.n;  // iOS17: all elements
  SG_OP_CHECK(ctx, k >= 0 && k <= l.n, ErrorCode::kShape, "k = {} is out of range for axis {} of x {}",
              k, axis, shape_str(x.shape()));
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  SG_ASSIGN_OR_RETURN(Tensor values, kern::new_tensor(ctx, DType::kF32, out_shape));
  SG_ASSIGN_OR_RETURN(Tensor indices, kern::new_tensor(ctx, DType::kI32, out_shape));
  const float* src = x.data<float>();
  std::vector<int64_t> ord;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      order_line(src + o * l.n * l.inner + i, l.n, l.inner, ascending, ord);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = (o * k + j) * l.inner + i;
        const int64_t from = ord[static_cast<size_t>(j)];
        values.mutable_data<float>()[dst] = src[(o * l.n + from) * l.inner + i];
        indices.mutable_data<int32_t>()[dst] = static_cast<int32_t>(from);
      }
    }
  }
  ctx.set_output(0, std::move(values));
  if (return_indices && ctx.num_outputs() > 1) ctx.set_output(1, std::move(indices));
  return Status::ok();
}

Status op_argsort(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", -1));
  SG_ASSIGN_OR_RETURN(bool ascending, ctx.get_bool_or("ascending", false));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, x.rank(), "axis"));
  SG_OP_CHECK(ctx, x.dim(axis) <= (int64_t{1} << 31) - 1, ErrorCode::kShape,
              "axis {} of x {} is too long for int32 indices", axis, shape_str(x.shape()));
  const Lines l = lines_of(x.shape(), axis);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kI32, x.shape()));
  std::vector<int64_t> ord;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      order_line(x.data<float>() + o * l.n * l.inner + i, l.n, l.inner, ascending, ord);
      for (int64_t j = 0; j < l.n; ++j) {
        out.mutable_data<int32_t>()[(o * l.n + j) * l.inner + i] =
            static_cast<int32_t>(ord[static_cast<size_t>(j)]);
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
