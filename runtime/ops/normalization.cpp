// Kernels of the "normalization" family (runtime/ops/README.md, Normalization and activations):
// layer_norm, l2_norm, batch_norm, instance_norm, local_response_norm. Statistics use the
// population variance (divide by n), in fp32.
#include "core/parallel.h"
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sg {
namespace {

// Optional per-element parameter (gamma/beta/mean/...) of exactly n elements, as fp32.
Result<Tensor> optional_param(OpContext& ctx, std::string_view name, int64_t n,
                              std::string_view what) {
  if (!ctx.has(name)) return Tensor();
  SG_ASSIGN_OR_RETURN(Tensor t, ctx.get_f32(name));
  SG_OP_CHECK(ctx, t.numel() == n, ErrorCode::kShape, "{} has shape {}, expected {} elements ({})",
              name, shape_str(t.shape()), n, what);
  return t;
}

inline float at_or(const Tensor& t, int64_t i, float fallback) {
  return t.defined() ? t.data<float>()[i] : fallback;
}

// Normalises each group of n values: out = (x − mean)/sqrt(var + eps)·gamma[j] + beta[j],
// where element j of a group sits at base + offs[j].
void normalize_group(const float* x, float* out, int64_t base, const std::vector<int64_t>& offs,
                     float eps, const Tensor& gamma, const Tensor& beta) {
  const int64_t n = static_cast<int64_t>(offs.size());
  if (n == 0) return;
  // Sums are taken of x − x[first] (shifted data): with a mean far from 0 the plain fp32 sum
  // would lose the low bits that the deviations live in.
  const float shift = x[base + offs[0]];
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += x[base + offs[j]] - shift;
  const float mean_shifted = sum / static_cast<float>(n);
  float sq = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float d = (x[base + offs[j]] - shift) - mean_shifted;
    sq += d * d;
  }
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = base + offs[j];
    out[p] = ((x[p] - shift) - mean_shifted) * inv * at_or(gamma, j, 1.0f) + at_or(beta, j, 0.0f);
  }
}

// Offsets of every combination of `dims` (row-major over the listed dims, in order).
std::vector<int64_t> offsets_over(const Shape& shape, const std::vector<int64_t>& dims) {
  const std::vector<int64_t> strides = kern::strides_of(shape);
  std::vector<int64_t> offs{0};
  for (int64_t d : dims) {
    std::vector<int64_t> next;
    next.reserve(offs.size() * static_cast<size_t>(shape[static_cast<size_t>(d)]));
    for (int64_t o : offs) {
      for (int64_t i = 0; i < shape[static_cast<size_t>(d)]; ++i) {
        next.push_back(o + i * strides[static_cast<size_t>(d)]);
      }
    }
    offs.swap(next);
  }
  return offs;
}

}  // namespace

Status op_layer_norm(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  std::vector<int64_t> all(static_cast<size_t>(x.rank()));
  for (int64_t i = 0; i < x.rank(); ++i) all[static_cast<size_t>(i)] = i;
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> axes_in, ctx.get_ints_or("axes", all));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> axes, kern::normalize_axes(ctx, axes_in, x.rank(), "axes"));
  std::sort(axes.begin(), axes.end());
  SG_ASSIGN_OR_RETURN(double eps, ctx.get_float_or("epsilon", 1e-5));
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) rest.push_back(d);
  }
  const std::vector<int64_t> inner = offsets_over(x.shape(), axes);
  const std::vector<int64_t> outer = offsets_over(x.shape(), rest);
  const int64_t n = static_cast<int64_t>(inner.size());
  SG_ASSIGN_OR_RETURN(Tensor gamma, optional_param(ctx, "gamma", n, "x.shape[axes]"));
  SG_ASSIGN_OR_RETURN(Tensor beta, optional_param(ctx, "beta", n, "x.shape[axes]"));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  const auto groups = static_cast<int64_t>(outer.size());
  parallel_for(groups, 16384 / std::max<int64_t>(n, 1) + 1, [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      normalize_group(src, dst, outer[static_cast<size_t>(g)], inner, static_cast<float>(eps),
                      gamma, beta);
    }
  });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_l2_norm(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(double eps, ctx.get_float_or("epsilon", 1e-6));
  SG_OP_CHECK(ctx, x.rank() >= 1, ErrorCode::kShape, "x must have rank >= 1, got a scalar");
  // The last 3 dims are normalised together (all dims when the rank is below 3).
  int64_t batch = 1;
  for (int64_t d = 0; d + 3 < x.rank(); ++d) batch *= x.dim(d);
  const int64_t n = batch == 0 ? 0 : x.numel() / batch;
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    float sq = 0;
    for (int64_t j = 0; j < n; ++j) sq += src[b * n + j] * src[b * n + j];
    const float inv = 1.0f / std::sqrt(sq + static_cast<float>(eps));
    for (int64_t j = 0; j < n; ++j) dst[b * n + j] = src[b * n + j] * inv;
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_batch_norm(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, x.rank() >= 2, ErrorCode::kShape, "x must be [N, C, *D], got {}",
              shape_str(x.shape()));
  const int64_t C = x.dim(1);
  SG_OP_CHECK(ctx, ctx.has("mean") && ctx.has("variance"), ErrorCode::kMissingParameter,
              "batch_norm needs 'mean' and 'variance'");
  SG_ASSIGN_OR_RETURN(Tensor mean, optional_param(ctx, "mean", C, "one per channel"));
  SG_ASSIGN_OR_RETURN(Tensor var, optional_param(ctx, "variance", C, "one per channel"));
  SG_ASSIGN_OR_RETURN(Tensor gamma, optional_param(ctx, "gamma", C, "one per channel"));
  SG_ASSIGN_OR_RETURN(Tensor beta, optional_param(ctx, "beta", C, "one per channel"));
  SG_ASSIGN_OR_RETURN(double eps, ctx.get_float_or("epsilon", 1e-5));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  const int64_t N = x.dim(0);
  const int64_t inner = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      const float inv = 1.0f / std::sqrt(var.data<float>()[c] + static_cast<float>(eps));
      const float m = mean.data<float>()[c];
      const float g = at_or(gamma, c, 1.0f), bt = at_or(beta, c, 0.0f);
      const int64_t base = (b * C + c) * inner;
      for (int64_t j = 0; j < inner; ++j) dst[base + j] = (src[base + j] - m) * inv * g + bt;
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_instance_norm(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, x.rank() >= 3, ErrorCode::kShape, "x must be [N, C, *D] with rank >= 3, got {}",
              shape_str(x.shape()));
  const int64_t N = x.dim(0), C = x.dim(1);
  SG_ASSIGN_OR_RETURN(Tensor gamma, optional_param(ctx, "gamma", C, "one per channel"));
  SG_ASSIGN_OR_RETURN(Tensor beta, optional_param(ctx, "beta", C, "one per channel"));
  SG_ASSIGN_OR_RETURN(double eps, ctx.get_float_or("epsilon", 1e-5));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  const int64_t inner = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
  std::vector<int64_t> offs(static_cast<size_t>(inner));
  for (int64_t j = 0; j < inner; ++j) offs[static_cast<size_t>(j)] = j;
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      // One group per (n, c); gamma/beta are per channel, so apply them after normalising.
      const int64_t base = (b * C + c) * inner;
      normalize_group(src, dst, base, offs, static_cast<float>(eps), Tensor(), Tensor());
      const float g = at_or(gamma, c, 1.0f), bt = at_or(beta, c, 0.0f);
      for (int64_t j = 0; j < inner; ++j) dst[base + j] = dst[base + j] * g + bt;
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// local_response_norm (coremltools iOS15 normalization.py): x [N, C, *spatial] (1-2 spatial
// dims); y = x / (k + alpha / size * sum of x^2 over channels [c - floor((size - 1) / 2),
// c + ceil((size - 1) / 2)] clipped to [0, C))^beta. The window is the one of Core ML's
// NeuralNetwork LRN layer (what the op lowers to); for odd sizes it is PyTorch's as well.
Status op_local_response_norm(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, x.rank() >= 3 && x.rank() <= 4, ErrorCode::kShape,
              "x has shape {}: needs rank 3 or 4 ([N, C, *spatial])", shape_str(x.shape()));
  SG_ASSIGN_OR_RETURN(int64_t size, ctx.get_int("size"));
  SG_ASSIGN_OR_RETURN(double alpha, ctx.get_float_or("alpha", 1e-4));
  SG_ASSIGN_OR_RETURN(double beta, ctx.get_float_or("beta", 0.75));
  SG_ASSIGN_OR_RETURN(double k, ctx.get_float_or("k", 1.0));
  SG_OP_CHECK(ctx, size >= 1 && size <= (int64_t{1} << 24), ErrorCode::kShape, "size {} must be >= 1", size);
  const int64_t N = x.dim(0), C = x.dim(1), inner = x.numel() / std::max<int64_t>(1, N * C);
  const int64_t lo_reach = (size - 1) / 2, hi_reach = size - 1 - lo_reach;
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t c0 = std::max<int64_t>(0, c - lo_reach), c1 = std::min(C - 1, c + hi_reach);
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t j = c0; j <= c1; ++j) {
          const double v = src[(n * C + j) * inner + i];
          sq += v * v;
        }
        const int64_t at = (n * C + c) * inner + i;
        dst[at] = static_cast<float>(src[at] / std::pow(k + alpha / static_cast<double>(size) * sq, beta));
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
