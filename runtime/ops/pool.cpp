// Pooling (coremltools 9.0 iOS15/pool.py): avg_pool, max_pool (1-3 spatial dims), l2_pool
// (1-2). x is [N, C, *spatial]; kernel_sizes, strides (default 1), pad_type valid / same /
// same_lower / custom with pad [before, after] per dim, ceil_mode (PyTorch's: the last window
// may run past the padded input, but a window starting in the right padding is dropped; with
// ceil_mode a kernel longer than the padded input makes one clipped window, as coremltools'
// output-size formula gives).
// Padding never wins a max; for avg it counts in the divisor (clipped to the padded extent, as
// PyTorch does with ceil_mode) unless exclude_padding_from_average; l2 sums squares.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sg {
namespace {

enum class Pool { kAvg, kMax, kL2 };

struct Geometry {
  int64_t in[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1};
  int64_t before[3] = {0, 0, 0}, after[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

Status resolve(OpContext& ctx, const Tensor& x, int max_spatial, Geometry& g) {
  const int64_t s = x.rank() - 2;
  SG_OP_CHECK(ctx, s >= 1 && s <= max_spatial, ErrorCode::kShape,
              "x has shape {}: needs [N, C] and 1 to {} spatial dims", shape_str(x.shape()), max_spatial);
  const auto n = static_cast<size_t>(s);
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx.get_ints("kernel_sizes"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ctx.get_ints_or("strides", std::vector<int64_t>(n, 1)));
  SG_ASSIGN_OR_RETURN(std::string pad_type, ctx.get_string_or("pad_type", "valid"));
  SG_ASSIGN_OR_RETURN(bool ceil_mode, ctx.get_bool_or("ceil_mode", false));
  SG_OP_CHECK(ctx, kernel.size() == n && strides.size() == n, ErrorCode::kShape,
              "kernel_sizes {} and strides {} need {} entries (one per spatial dim)",
              kern::ints_str(kernel), kern::ints_str(strides), s);
  std::vector<int64_t> pad(2 * n, 0);
  if (pad_type == "custom") {
    SG_ASSIGN_OR_RETURN(pad, ctx.get_ints_or("pad", pad));
    SG_OP_CHECK(ctx, pad.size() == 2 * n, ErrorCode::kShape, "pad {} must have {} entries",
                kern::ints_str(pad), 2 * s);
  } else {
    SG_OP_CHECK(ctx, pad_type == "valid" || pad_type == "same" || pad_type == "same_lower",
                ErrorCode::kShape, "pad_type '{}' is not one of valid, same, same_lower, custom",
                pad_type);
  }
  SG_OP_CHECK(ctx, !(ceil_mode && (pad_type == "same" || pad_type == "same_lower")), ErrorCode::kShape,
              "ceil_mode needs pad_type valid or custom, not '{}'", pad_type);
  const int off = 3 - static_cast<int>(s);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x.dim(2 + static_cast<int64_t>(i)), k = kernel[i], st = strides[i];
    SG_OP_CHECK(ctx, k >= 1 && k <= (int64_t{1} << 24) && st >= 1 && st <= (int64_t{1} << 24),
                ErrorCode::kShape, "kernel_sizes {} and strides {} must be in [1, 2^24]",
                kern::ints_str(kernel), kern::ints_str(strides));
    int64_t before = pad[2 * i], after = pad[2 * i + 1];
    SG_OP_CHECK(ctx, before >= 0 && after >= 0 && before < k && after < k, ErrorCode::kShape,
                "pad {}: each side must be in [0, kernel size)", kern::ints_str(pad));
    SG_OP_CHECK(ctx, !ceil_mode || before == after, ErrorCode::kShape,
                "ceil_mode needs symmetric pad, got {}", kern::ints_str(pad));
    if (pad_type == "same" || pad_type == "same_lower") {
      const int64_t out = (in + st - 1) / st;
      const int64_t total = std::max<int64_t>(0, (out - 1) * st + k - in);
      before = pad_type == "same" ? total / 2 : total - total / 2;
      after = total - before;
    }
    const int64_t span = in + before + after - k;
    // ceil_mode rounds the window count up, so a kernel longer than the padded input still
    // makes one (clipped) window while span + stride - 1 >= 0: coremltools' output-size formula
    // gives 1 there, not an error.
    SG_OP_CHECK(ctx, ceil_mode ? span + st - 1 >= 0 : span >= 0, ErrorCode::kShape,
                "spatial dim {}: kernel {} exceeds the padded input {}", i, k, in + before + after);
    int64_t out = (ceil_mode ? span + st - 1 : span) / st + 1;
    if (ceil_mode && (out - 1) * st >= in + before && before + after > 0) --out;
    const auto j = static_cast<size_t>(off) + i;
    g.in[j] = in;
    g.kernel[j] = k;
    g.stride[j] = st;
    g.before[j] = before;
    g.after[j] = after;
    g.out[j] = out;
  }
  return Status::ok();
}

Status pool(OpContext& ctx, Pool kind) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  Geometry g;
  SG_TRY(resolve(ctx, x, kind == Pool::kL2 ? 2 : 3, g));
  bool exclude_pad = false;
  if (kind == Pool::kAvg) {
    SG_ASSIGN_OR_RETURN(exclude_pad, ctx.get_bool_or("exclude_padding_from_average", false));
  }
  Shape out_shape{x.dim(0), x.dim(1)};
  for (int64_t d = 2; d < x.rank(); ++d) out_shape.push_back(g.out[3 - x.rank() + d]);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_vol = g.in[0] * g.in[1] * g.in[2];
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = src + p * in_vol;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const int64_t o[3] = {od, oh, ow};
          int64_t lo[3], hi[3], count_padded = 1;
          for (int d = 0; d < 3; ++d) {
            const int64_t start = o[d] * g.stride[d] - g.before[d];
            const int64_t end = std::min(start + g.kernel[d], g.in[d] + g.after[d]);
            count_padded *= end - start;
            lo[d] = std::max<int64_t>(start, 0);
            hi[d] = std::min(end, g.in[d]);
          }
          double acc = kind == Pool::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          bool nan = false;
          for (int64_t d = lo[0]; d < hi[0]; ++d) {
            for (int64_t h = lo[1]; h < hi[1]; ++h) {
              for (int64_t w = lo[2]; w < hi[2]; ++w) {
                const double v = plane[(d * g.in[1] + h) * g.in[2] + w];
                ++count;
                if (std::isnan(v)) nan = true;
                if (kind == Pool::kMax) {
                  acc = std::max(acc, v);
                } else if (kind == Pool::kAvg) {
                  acc += v;
                } else {
                  acc += v * v;
                }
              }
            }
          }
          double r = acc;
          if (kind == Pool::kAvg) r = count == 0 ? 0.0 : acc / static_cast<double>(exclude_pad ? count : count_padded);
          if (kind == Pool::kL2) r = std::sqrt(acc);
          if (nan) r = std::numeric_limits<double>::quiet_NaN();
          *dst++ = static_cast<float>(r);
        }
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace

Status op_avg_pool(OpContext& ctx) { return pool(ctx, Pool::kAvg); }
Status op_max_pool(OpContext& ctx) { return pool(ctx, Pool::kMax); }
Status op_l2_pool(OpContext& ctx) { return pool(ctx, Pool::kL2); }

}  // namespace sg
