// Activation ops (formats.md 4.3, coremltools iOS15 activation definitions). fp32 math;
// alpha/beta are read as given (iOS17 keeps them fp32 next to fp16 x).
#include "ops/elementwise.h"
#include "shardgate/ops.h"

#include <algorithm>
#include <cmath>

namespace sg {
namespace {

using kern::map_x;

Result<float> param(OpContext& ctx, const char* name) {
  SG_ASSIGN_OR_RETURN(double v, ctx.get_float(name));
  return static_cast<float>(v);
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

}  // namespace

Status op_clamped_relu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  SG_ASSIGN_OR_RETURN(float beta, param(ctx, "beta"));
  return map_x(ctx, [=](float v) {
    return std::min(std::max(v, 0.0f), beta) + std::min(std::min(v, 0.0f) * alpha, beta);
  });
}

Status op_clip(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  SG_ASSIGN_OR_RETURN(float beta, param(ctx, "beta"));
  SG_OP_CHECK(ctx, !(alpha > beta), ErrorCode::kShape, "clip: alpha {} is greater than beta {}",
              alpha, beta);
  // NaN propagates like numpy's minimum/maximum.
  return map_x(ctx, [=](float v) { return std::isnan(v) ? v : std::min(std::max(v, alpha), beta); });
}

Status op_elu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double alpha_d, ctx.get_float_or("alpha", 1.0));
  const float alpha = static_cast<float>(alpha_d);
  return map_x(ctx, [=](float v) { return v < 0 ? alpha * (std::exp(v) - 1.0f) : v; });
}

Status op_gelu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::string mode, ctx.get_string_or("mode", "EXACT"));
  if (mode == "EXACT") {
    return map_x(ctx, [](float v) {
      return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    });
  }
  if (mode == "TANH_APPROXIMATION") {
    return map_x(ctx, [](float v) {
      const double x = v;
      const double a = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return static_cast<float>(0.5 * x * (1.0 + std::tanh(a)));
    });
  }
  if (mode == "SIGMOID_APPROXIMATION") {
    return map_x(ctx, [](float v) { return v * sigmoid(1.702f * v); });
  }
  return ctx.error(ErrorCode::kShape,
                   fmt::format("gelu: mode '{}' is not EXACT, TANH_APPROXIMATION or "
                               "SIGMOID_APPROXIMATION", mode));
}

Status op_leaky_relu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double alpha_d, ctx.get_float_or("alpha", 0.01));
  const float alpha = static_cast<float>(alpha_d);
  return map_x(ctx, [=](float v) { return v < 0 ? v * alpha : v; });
}

Status op_relu(OpContext& ctx) {
  return map_x(ctx, [](float v) { return std::isnan(v) ? v : std::max(v, 0.0f); });
}

Status op_relu6(OpContext& ctx) {
  return map_x(ctx, [](float v) { return std::isnan(v) ? v : std::min(std::max(v, 0.0f), 6.0f); });
}

Status op_scaled_tanh(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  SG_ASSIGN_OR_RETURN(float beta, param(ctx, "beta"));
  return map_x(ctx, [=](float v) { return alpha * std::tanh(v * beta); });
}

Status op_sigmoid(OpContext& ctx) { return map_x(ctx, sigmoid); }

Status op_sigmoid_hard(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  SG_ASSIGN_OR_RETURN(float beta, param(ctx, "beta"));
  return map_x(ctx, [=](float v) { return std::min(std::max(alpha * v + beta, 0.0f), 1.0f); });
}

Status op_silu(OpContext& ctx) { return map_x(ctx, [](float v) { return v * sigmoid(v); }); }

Status op_softplus(OpContext& ctx) {
  // log(1 + e^x) written so large |x| neither overflows nor loses the small term.
  return map_x(ctx, [](float v) { return std::log1p(std::exp(-std::fabs(v))) + std::max(v, 0.0f); });
}

Status op_softsign(OpContext& ctx) {
  return map_x(ctx, [](float v) { return v / (1.0f + std::fabs(v)); });
}

Status op_thresholded_relu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double alpha_d, ctx.get_float_or("alpha", 1.0));
  const float alpha = static_cast<float>(alpha_d);
  return map_x(ctx, [=](float v) { return v < alpha ? 0.0f : v; });
}

}  // namespace sg
