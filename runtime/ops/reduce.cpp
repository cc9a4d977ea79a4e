// Reductions (runtime/ops/README.md, Reductions): `axes` (default: all; negative allowed),
// `keep_dims`. Float inputs accumulate in double in input order and produce fp32; integer inputs
// produce int32. reduce_argmax/argmin take one `axis` (default -1) and return the first index of
// the extreme (a NaN counts as the extreme, like numpy).
#include "ops/float_rows.h"
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cmath>
#include <limits>

namespace sg {
namespace {

enum class Kind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Where each input element lands in the output, given the reduced axes.
struct ReducePlan {
  Shape out_shape;
  std::vector<int64_t> out_index;  // per input element
  int64_t out_count = 0;
  int64_t group = 1;               // input elements per output element
};

// with_index: fill out_index (the fast path of trailing axes does not need it).
Result<ReducePlan> plan(OpContext& ctx, const Shape& in, const std::vector<bool>& reduced,
                        bool keep_dims, bool with_index = true) {
  ReducePlan p;
  const size_t rank = in.size();
  Shape kept_shape;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      p.group *= in[d];
      if (keep_dims) p.out_shape.push_back(1);
    } else {
      p.out_shape.push_back(in[d]);
      kept_shape.push_back(in[d]);
    }
  }
  p.out_count = numel(kept_shape);
  if (!with_index) return p;
  const int64_t n = numel(in);
  p.out_index.resize(static_cast<size_t>(n));
  const std::vector<int64_t> kept_strides = kern::strides_of(kept_shape);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = 0;
    size_t k = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (!reduced[d]) o += coord[d] * kept_strides[k++];
    }
    p.out_index[static_cast<size_t>(i)] = o;
    for (size_t d = rank; d-- > 0;) {
      if (++coord[d] < in[d]) break;
      coord[d] = 0;
    }
  }
  (void)ctx;
  return p;
}

// numpy max/min: a NaN anywhere makes the result NaN.
double nan_max(double a, double e) { return std::isnan(a) ? a : (std::isnan(e) || e > a ? e : a); }
double nan_min(double a, double e) { return std::isnan(a) ? a : (std::isnan(e) || e < a ? e : a); }

// One input element into its output's accumulator.
inline void fold(Kind kind, double& a, double e) {
  switch (kind) {
    case Kind::kSum: case Kind::kMean: case Kind::kLogSum: a += e; break;
    case Kind::kMax: case Kind::kLogSumExp: a = nan_max(a, e); break;
    case Kind::kMin: a = nan_min(a, e); break;
    case Kind::kProd: a *= e; break;
    case Kind::kL1: a += std::fabs(e); break;
    case Kind::kL2: case Kind::kSumSquare: a += e * e; break;
  }
}

Result<std::vector<bool>> reduced_axes(OpContext& ctx, int64_t rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), true);
  if (!ctx.has("axes")) return reduced;
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.get_ints("axes"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> norm, kern::normalize_axes(ctx, axes, rank, "axes"));
  std::fill(reduced.begin(), reduced.end(), false);
  for (int64_t a : norm) reduced[static_cast<size_t>(a)] = true;
  return reduced;
}

Status reduce(OpContext& ctx, Kind kind) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.dtype() != DType::kString, ErrorCode::kShape, "x must be numeric");
  SG_ASSIGN_OR_RETURN(std::vector<bool> reduced, reduced_axes(ctx, x.rank()));
  SG_ASSIGN_OR_RETURN(bool keep_dims, ctx.get_bool_or("keep_dims", false));
  // Trailing axes reduced (rmsnorm's mean over the last dim): each output's inputs are one
  // contiguous run, read in place below instead of through a per-element index and a double
  // copy of x (~2% of a 512-token MoE layer). Same values, same order, same double arithmetic.
  bool trailing = kind != Kind::kLogSumExp && kern::float_rows_dtype(x.dtype());
  for (size_t d = 1; trailing && d < reduced.size(); ++d) trailing = !reduced[d - 1] || reduced[d];
  SG_ASSIGN_OR_RETURN(ReducePlan p, plan(ctx, x.shape(), reduced, keep_dims, !trailing));
  if ((kind == Kind::kMax || kind == Kind::kMin) && p.group == 0 && p.out_count > 0) {
    return ctx.error(ErrorCode::kShape, fmt::format("cannot take the {} of an empty axis of {}",
                                                    kind == Kind::kMax ? "max" : "min",
                                                    shape_str(x.shape())));
  }
  const size_t m = static_cast<size_t>(p.out_count);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> acc(m, kind == Kind::kProd ? 1.0
                             : kind == Kind::kMax || kind == Kind::kLogSumExp ? -kInf
                             : kind == Kind::kMin ? kInf : 0.0);
  std::vector<double> v;
  if (trailing) {
    kern::float_rows_unary_blocks(x, p.group, [&](int64_t row, const float* a, int64_t n) {
      double& r = acc[static_cast<size_t>(row)];
      for (int64_t j = 0; j < n; ++j) fold(kind, r, a[j]);
    });
  } else {
    SG_ASSIGN_OR_RETURN(v, to_double_vector(x));
    for (size_t i = 0; i < v.size(); ++i) fold(kind, acc[static_cast<size_t>(p.out_index[i])], v[i]);
  }
  if (kind == Kind::kLogSumExp) {
    // Second pass: sum of exp(x - max) per output, max-subtracted so exp never overflows.
    std::vector<double> sum(m, 0.0);
    for (size_t i = 0; i < v.size(); ++i) {
      const size_t o = static_cast<size_t>(p.out_index[i]);
      if (std::isfinite(acc[o])) sum[o] += std::exp(v[i] - acc[o]);
    }
    for (size_t o = 0; o < m; ++o) {
      if (std::isfinite(acc[o])) acc[o] += std::log(sum[o]);
      // max of +inf or -inf: exp(x - max) is undefined; numpy gives +inf / -inf there.
    }
  }
  for (double& a : acc) {
    if (kind == Kind::kMean) a /= static_cast<double>(p.group);
    if (kind == Kind::kL2) a = std::sqrt(a);
    if (kind == Kind::kLogSum) a = std::log(a);
  }
  const bool int_out = dtype_is_integer(x.dtype()) || x.dtype() == DType::kBool;
  if (int_out) {
    std::vector<int64_t> iv(m);
    for (size_t o = 0; o < m; ++o) iv[o] = kern::saturate_i64(acc[o]);
    SG_ASSIGN_OR_RETURN(Tensor out, kern::int32_tensor(ctx, p.out_shape, iv));
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, p.out_shape));
  float* d = out.mutable_data<float>();
  for (size_t o = 0; o < m; ++o) d[o] = static_cast<float>(acc[o]);
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status arg_reduce(OpContext& ctx, bool is_max) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.dtype() != DType::kString, ErrorCode::kShape, "x must be numeric");
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", -1));
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, x.rank(), "axis"));
  SG_ASSIGN_OR_RETURN(bool keep_dims, ctx.get_bool_or("keep_dims", false));
  SG_ASSIGN_OR_RETURN(std::string out_dtype, ctx.get_string_or("output_dtype", "int32"));
  SG_OP_CHECK(ctx, out_dtype == "int32" || out_dtype == "uint16", ErrorCode::kShape,
              "output_dtype '{}' is not int32 or uint16", out_dtype);
  const int64_t len = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  // As reduce_max: an output element over an empty axis has no extreme to point at (an empty
  // output is fine). x.numel() is 0 whenever len is, so it cannot decide this.
  SG_OP_CHECK(ctx, len > 0 || outer * inner == 0, ErrorCode::kShape,
              "cannot take the arg{} of an empty axis {} of {}", is_max ? "max" : "min", axis,
              shape_str(x.shape()));
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != axis) out_shape.push_back(x.dim(d));
    else if (keep_dims) out_shape.push_back(1);
  }
  std::vector<int64_t> r(static_cast<size_t>(outer * inner), 0);
  if (len > 0) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        double best = element_as_double(x, base);
        int64_t best_k = 0;
        for (int64_t k = 1; k < len && !std::isnan(best); ++k) {
          const double e = element_as_double(x, base + k * inner);
          if (std::isnan(e) || (is_max ? e > best : e < best)) {
            best = e;
            best_k = k;
          }
        }
        r[static_cast<size_t>(o * inner + i)] = best_k;
      }
    }
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::int32_tensor(ctx, out_shape, r));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace

Status op_reduce_argmax(OpContext& ctx) { return arg_reduce(ctx, true); }
Status op_reduce_argmin(OpContext& ctx) { return arg_reduce(ctx, false); }
Status op_reduce_l1_norm(OpContext& ctx) { return reduce(ctx, Kind::kL1); }
Status op_reduce_l2_norm(OpContext& ctx) { return reduce(ctx, Kind::kL2); }
Status op_reduce_log_sum(OpContext& ctx) { return reduce(ctx, Kind::kLogSum); }
Status op_reduce_log_sum_exp(OpContext& ctx) { return reduce(ctx, Kind::kLogSumExp); }
Status op_reduce_max(OpContext& ctx) { return reduce(ctx, Kind::kMax); }
Status op_reduce_mean(OpContext& ctx) { return reduce(ctx, Kind::kMean); }
Status op_reduce_min(OpContext& ctx) { return reduce(ctx, Kind::kMin); }
Status op_reduce_prod(OpContext& ctx) { return reduce(ctx, Kind::kProd); }
Status op_reduce_sum(OpContext& ctx) { return reduce(ctx, Kind::kSum); }
Status op_reduce_sum_square(OpContext& ctx) { return reduce(ctx, Kind::kSumSquare); }

}  // namespace sg
