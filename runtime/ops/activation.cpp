// Activation ops (runtime/ops/README.md, Normalization and activations; coremltools iOS15
// activation definitions). fp32 math; alpha/beta are read as given (iOS17 keeps them fp32 next to
// fp16 x).
#include "ops/elementwise.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>

namespace sg {
namespace {

using kern::map_x;
using kern::map_x_costly;

Result<float> param(OpContext& ctx, const char* name) {
  SG_ASSIGN_OR_RETURN(double v, ctx.get_float(name));
  return static_cast<float>(v);
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// prelu / softplus_parametric: x is [B, C, *spatial] (rank >= 3) and each per-channel
// parameter has exactly C entries, applied along dim 1.
Result<std::vector<float>> channel_param(OpContext& ctx, const Tensor& x, const char* name) {
  SG_OP_CHECK(ctx, x.rank() >= 3, ErrorCode::kShape, "x has shape {}: needs rank >= 3 ([B, C, ...])",
              shape_str(x.shape()));
  SG_ASSIGN_OR_RETURN(Tensor p, ctx.get_f32(name));
  SG_OP_CHECK(ctx, p.rank() == 1 && p.dim(0) == x.dim(1), ErrorCode::kShape,
              "{} has shape {}, expected [{}] (one value per channel of x {})", name,
              shape_str(p.shape()), x.dim(1), shape_str(x.shape()));
  return std::vector<float>(p.data<float>(), p.data<float>() + p.numel());
}

// out[b, c, ...] = f(x[b, c, ...], c)
template <typename F>
Status map_channels(OpContext& ctx, const Tensor& x, F f) {
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  const int64_t channels = x.dim(1);
  int64_t inner = 1;
  for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = f(src[i], (i / inner) % channels);
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

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
    return map_x_costly(ctx, [](float v) {
      return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    });
  }
  if (mode == "TANH_APPROXIMATION") {
    return map_x_costly(ctx, [](float v) {
      const double x = v;
      const double a = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return static_cast<float>(0.5 * x * (1.0 + std::tanh(a)));
    });
  }
  if (mode == "SIGMOID_APPROXIMATION") {
    return map_x_costly(ctx, [](float v) { return v * sigmoid(1.702f * v); });
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

Status op_linear_activation(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  SG_ASSIGN_OR_RETURN(float beta, param(ctx, "beta"));
  return map_x(ctx, [=](float v) { return alpha * v + beta; });
}

Status op_prelu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(std::vector<float> alpha, channel_param(ctx, x, "alpha"));
  return map_channels(ctx, x, [&](float v, int64_t c) {
    return std::max(v, 0.0f) + std::min(v, 0.0f) * alpha[static_cast<size_t>(c)];
  });
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

Status op_sigmoid(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return sigmoid(v); }); }

Status op_sigmoid_hard(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  SG_ASSIGN_OR_RETURN(float beta, param(ctx, "beta"));
  return map_x(ctx, [=](float v) { return std::min(std::max(alpha * v + beta, 0.0f), 1.0f); });
}

Status op_silu(OpContext& ctx) { return map_x_costly(ctx, [](float v) { return v * sigmoid(v); }); }

Status op_softplus(OpContext& ctx) {
  // log(1 + e^x) written so large |x| neither overflows nor loses the small term.
  return map_x_costly(ctx, [](float v) { return std::log1p(std::exp(-std::fabs(v))) + std::max(v, 0.0f); });
}

Status op_softplus_parametric(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(std::vector<float> alpha, channel_param(ctx, x, "alpha"));
  SG_ASSIGN_OR_RETURN(std::vector<float> beta, channel_param(ctx, x, "beta"));
  return map_channels(ctx, x, [&](float v, int64_t c) {
    const float bx = beta[static_cast<size_t>(c)] * v;
    return alpha[static_cast<size_t>(c)] * (std::log1p(std::exp(-std::fabs(bx))) + std::max(bx, 0.0f));
  });
}

Status op_softsign(OpContext& ctx) {
  return map_x_costly(ctx, [](float v) { return v / (1.0f + std::fabs(v)); });
}

// threshold: max(x, alpha) (coremltools lists it with the unary elementwise ops).
Status op_threshold(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(float alpha, param(ctx, "alpha"));
  return map_x(ctx, [=](float v) { return std::isnan(v) ? v : std::max(v, alpha); });
}

Status op_thresholded_relu(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double alpha_d, ctx.get_float_or("alpha", 1.0));
  const float alpha = static_cast<float>(alpha_d);
  return map_x(ctx, [=](float v) { return v < alpha ? 0.0f : v; });
}

}  // namespace sg
