// quantize / dequantize (iOS17 activation quantization, runtime/ops/README.md, Compile-time weights):
//   quantize:   q = clip(round_half_even(x / scale) + zero_point) to the int8/uint8 range
//   dequantize: x = (q − zero_point) · scale
// scale and zero_point are scalars, or vectors of length input.shape[axis] applied along axis.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sg {
namespace {

// Per-element scale and zero point: index 0 for scalars, the coordinate along `axis` for
// vectors.
struct AffineParams {
  std::vector<double> scale, zero_point;
  int64_t inner = 1;  // product of dims after axis
  int64_t n = 1;      // dim at axis (1 for scalars)
  double scale_at(int64_t i) const { return scale.size() == 1 ? scale[0] : scale[static_cast<size_t>((i / inner) % n)]; }
  double zp_at(int64_t i) const {
    if (zero_point.empty()) return 0;
    return zero_point.size() == 1 ? zero_point[0] : zero_point[static_cast<size_t>((i / inner) % n)];
  }
};

Result<AffineParams> affine_params(OpContext& ctx, const Tensor& input) {
  AffineParams p;
  SG_ASSIGN_OR_RETURN(Tensor scale, ctx.get("scale"));
  SG_ASSIGN_OR_RETURN(p.scale, to_double_vector(scale));
  if (ctx.has("zero_point")) {
    SG_ASSIGN_OR_RETURN(Tensor zp, ctx.get("zero_point"));
    SG_ASSIGN_OR_RETURN(p.zero_point, to_double_vector(zp));
  }
  const size_t count = p.scale.size();
  SG_OP_CHECK(ctx, count >= 1, ErrorCode::kShape, "scale is empty");
  SG_OP_CHECK(ctx, p.zero_point.empty() || p.zero_point.size() == count, ErrorCode::kShape,
              "zero_point has {} elements, scale {}", p.zero_point.size(), count);
  if (count > 1 || ctx.has("axis")) {
    SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int("axis"));
    SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, input.rank(), "axis"));
    p.n = input.dim(axis);
    SG_OP_CHECK(ctx, count == 1 || static_cast<int64_t>(count) == p.n, ErrorCode::kShape,
                "scale has {} elements, expected 1 or input.shape[{}] = {}", count, axis, p.n);
    if (count == 1) p.n = 1;
    for (int64_t d = axis + 1; d < input.rank(); ++d) p.inner *= input.dim(d);
  }
  return p;
}

}  // namespace

Status op_quantize(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("input"));
  SG_ASSIGN_OR_RETURN(std::string dtype_s, ctx.get_string("output_dtype"));
  SG_OP_CHECK(ctx, dtype_s == "int8" || dtype_s == "uint8", ErrorCode::kUnsupported,
              "output_dtype '{}' is not int8 or uint8", dtype_s);
  const DType dtype = dtype_s == "int8" ? DType::kI8 : DType::kU8;
  const double lo = dtype == DType::kI8 ? -128 : 0, hi = dtype == DType::kI8 ? 127 : 255;
  SG_ASSIGN_OR_RETURN(AffineParams p, affine_params(ctx, x));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, dtype, x.shape()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    // nearbyint under the default rounding mode rounds half to even, like np.around.
    double q = std::nearbyint(static_cast<double>(x.data<float>()[i]) / p.scale_at(i)) + p.zp_at(i);
    q = std::isnan(q) ? 0 : std::clamp(q, lo, hi);
    if (dtype == DType::kI8) {
      out.mutable_data<int8_t>()[i] = static_cast<int8_t>(q);
    } else {
      out.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(q);
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_dequantize(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor q, ctx.get("input"));
  SG_OP_CHECK(ctx, kern::is_intlike(q), ErrorCode::kShape, "input must be an integer tensor, got {}",
              dtype_name(q.dtype()));
  SG_ASSIGN_OR_RETURN(AffineParams p, affine_params(ctx, q));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, q.shape()));
  for (int64_t i = 0; i < q.numel(); ++i) {
    out.mutable_data<float>()[i] =
        static_cast<float>((element_as_double(q, i) - p.zp_at(i)) * p.scale_at(i));
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
