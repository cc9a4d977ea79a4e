// Elementwise unary ops (runtime/ops/README.md, Elementwise). Float math in fp32;
// abs/sign/square/ceil/floor/round keep integer inputs integer; rsqrt/inverse/log add their epsilon
// (explicit or default) even when it is not written, as Core ML does.
#include "ops/elementwise.h"
#include "ops/kernels.h"

#include <cmath>

namespace sg {
namespace {

using kern::map_x;
using kern::map_x_costly;

// Integer inputs stay integer for ops that are exact on integers.
template <typename FI, typename FF>
Status int_or_float(OpContext& ctx, FI fi, FF ff) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  if (dtype_is_integer(x.dtype())) {
    std::vector<int64_t> v = kern::as_int64(x);
    for (int64_t& e : v) e = fi(e);
    SG_ASSIGN_OR_RETURN(Tensor out, kern::int32_tensor(ctx, x.shape(), v));
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  return map_x(ctx, ff);
}

Result<float> epsilon(OpContext& ctx, double fallback) {
  SG_ASSIGN_OR_RETURN(double eps, ctx.get_float_or("epsilon", fallback));
  return static_cast<float>(eps);
}

}  // namespace

Status op_abs(OpContext& ctx) {
  return int_or_float(
      ctx, [](int64_t v) { return v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v; },
      [](float v) { return std::fabs(v); });
}
Status op_acos(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::acos(v); }); }
Status op_asin(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::asin(v); }); }
Status op_atan(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::atan(v); }); }
Status op_atanh(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::atanh(v); }); }
Status op_ceil(OpContext& ctx) {
  return int_or_float(ctx, [](int64_t v) { return v; }, [](float v) { return std::ceil(v); });
}
Status op_cos(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::cos(v); }); }
Status op_cosh(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::cosh(v); }); }
Status op_erf(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::erf(v); }); }
Status op_exp(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::exp(v); }); }
Status op_exp2(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::exp2(v); }); }
Status op_floor(OpContext& ctx) {
  return int_or_float(ctx, [](int64_t v) { return v; }, [](float v) { return std::floor(v); });
}

Status op_inverse(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float eps, epsilon(ctx, 1e-4));
  return map_x(ctx, [eps](float v) { return 1.0f / (v + eps); });
}

Status op_log(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float eps, epsilon(ctx, 1e-45));
  return map_x(ctx, [eps](float v) { return std::log(v + eps); });
}

Status op_logical_not(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.dtype() != DType::kString, ErrorCode::kShape,
              "logical_not needs a bool tensor, got {}", dtype_name(x.dtype()));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kBool, x.shape()));
  uint8_t* dst = out.mutable_data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = element_as_double(x, i) == 0 ? 1 : 0;
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_round(OpContext& ctx) {
  // numpy round: halves go to the even neighbour (the default floating-point rounding mode).
  return int_or_float(ctx, [](int64_t v) { return v; }, [](float v) { return std::nearbyint(v); });
}

Status op_rsqrt(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float eps, epsilon(ctx, 1e-12));
  return map_x(ctx, [eps](float v) { return 1.0f / std::sqrt(v + eps); });
}

Status op_sign(OpContext& ctx) {
  return int_or_float(
      ctx, [](int64_t v) { return static_cast<int64_t>((v > 0) - (v < 0)); },
      [](float v) { return std::isnan(v) ? v : static_cast<float>((v > 0) - (v < 0)); });
}
Status op_sin(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::sin(v); }); }
Status op_sinh(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::sinh(v); }); }
Status op_sqrt(OpContext& ctx) { return map_x(ctx, [](float v) { return std::sqrt(v); }); }
Status op_square(OpContext& ctx) {
  return int_or_float(
      ctx, [](int64_t v) { return static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(v)); },
      [](float v) { return v * v; });
}
Status op_tan(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::tan(v); }); }
Status op_tanh(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return std::tanh(v); }); }

}  // namespace sg
