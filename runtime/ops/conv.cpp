// conv (runtime/ops/README.md, Linear algebra): 1-D, 2-D and 3-D convolution with groups, strides,
// dilations, the four pad types and an optional bias. Each (batch, group) pair becomes one product
// of gemm_x_wt: rows = output positions (im2col of the input), weight rows = the group's output
// channels. A 1×1, stride-1, unpadded conv (the ANE-style linear layer) skips im2col: its columns
// are the transposed input, so it costs what linear costs.
#include "core/parallel.h"
#include "ops/kernel_util.h"
#include "ops/linear_kernel.h"
#include "ops/kernels.h"

#include <algorithm>
#include <array>
#include <vector>

namespace sg {
namespace {

constexpr int kMaxSpatial = 3;
// Upper bound on the im2col scratch (floats) for one chunk of output positions.
constexpr int64_t kColumnBudget = int64_t{1} << 22;

struct ConvGeometry {
  int spatial = 0;  // 1..3; the arrays below are right-aligned in 3 slots, unused slots are 1/0
  std::array<int64_t, kMaxSpatial> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, kMaxSpatial> stride{1, 1, 1}, dilation{1, 1, 1}, pad_before{0, 0, 0};
};

Status resolve_geometry(OpContext& ctx, const Tensor& x, const Shape& w, ConvGeometry& g) {
  const int s = static_cast<int>(x.rank()) - 2;
  g.spatial = s;
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                      ctx.get_ints_or("strides", std::vector<int64_t>(static_cast<size_t>(s), 1)));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                      ctx.get_ints_or("dilations", std::vector<int64_t>(static_cast<size_t>(s), 1)));
  SG_ASSIGN_OR_RETURN(std::string pad_type, ctx.get_string_or("pad_type", "valid"));
  SG_OP_CHECK(ctx, static_cast<int>(strides.size()) == s, ErrorCode::kShape,
              "strides {} must have {} entries (one per spatial dim)", kern::ints_str(strides), s);
  SG_OP_CHECK(ctx, static_cast<int>(dilations.size()) == s, ErrorCode::kShape,
              "dilations {} must have {} entries (one per spatial dim)", kern::ints_str(dilations), s);
  std::vector<int64_t> pad(static_cast<size_t>(2 * s), 0);
  if (pad_type == "custom") {
    SG_ASSIGN_OR_RETURN(pad, ctx.get_ints_or("pad", pad));
    SG_OP_CHECK(ctx, static_cast<int>(pad.size()) == 2 * s, ErrorCode::kShape,
                "pad {} must have {} entries (before/after per spatial dim)", kern::ints_str(pad),
                2 * s);
  } else if (pad_type != "valid" && pad_type != "same" && pad_type != "same_lower") {
    return ctx.error(ErrorCode::kUnsupported,
                     fmt::format("pad_type '{}' is not one of valid, same, same_lower, custom", pad_type));
  }
  const int off = kMaxSpatial - s;
  for (int i = 0; i < s; ++i) {
    const size_t si = static_cast<size_t>(i);
    const int64_t in = x.dim(2 + i), k = w[static_cast<size_t>(2 + i)];
    const int64_t st = strides[si], dl = dilations[si];
    SG_OP_CHECK(ctx, st >= 1 && dl >= 1 && st <= (int64_t{1} << 31), ErrorCode::kShape,
                "strides {} and dilations {} must be in [1, 2^31]", kern::ints_str(strides),
                kern::ints_str(dilations));
    SG_OP_CHECK(ctx, k >= 1 && k <= (int64_t{1} << 31) && dl <= (int64_t{1} << 31),
                ErrorCode::kShape, "kernel size {} / dilation {} out of range", k, dl);
    const int64_t k_eff = (k - 1) * dl + 1;
    int64_t before = 0, after = 0;
    if (pad_type == "custom") {
      before = pad[2 * si];
      after = pad[2 * si + 1];
      SG_OP_CHECK(ctx, before >= 0 && after >= 0 && before <= (int64_t{1} << 31) &&
                           after <= (int64_t{1} << 31),
                  ErrorCode::kShape, "pad {} must hold non-negative sizes", kern::ints_str(pad));
    } else if (pad_type != "valid") {
      // Output ceil(in / stride); the odd element of the total pad goes after for "same" and
      // before for "same_lower" (coremltools aggregated_pad).
      const int64_t out = (in + st - 1) / st;
      const int64_t total = std::max<int64_t>(0, (out - 1) * st + k_eff - in);
      before = pad_type == "same" ? total / 2 : total - total / 2;
      after = total - before;
    }
    const int64_t span = in + before + after - k_eff;
    SG_OP_CHECK(ctx, span >= 0, ErrorCode::kShape,
                "spatial dim {}: kernel extent {} exceeds the padded input {} (x {}, weight {})", i,
                k_eff, in + before + after, shape_str(x.shape()), shape_str(w));
    g.in[static_cast<size_t>(off + i)] = in;
    g.kernel[static_cast<size_t>(off + i)] = k;
    g.stride[static_cast<size_t>(off + i)] = st;
    g.dilation[static_cast<size_t>(off + i)] = dl;
    g.pad_before[static_cast<size_t>(off + i)] = before;
    g.out[static_cast<size_t>(off + i)] = span / st + 1;
  }
  return Status::ok();
}

// Column rows for output positions [p0, p1) of one (batch, group) input slab [Cg, D, H, W]:
// col[p − p0, (c·KD + kd)·KH·KW + kh·KW + kw] = input at the tapped position, 0 in the padding.
void im2col(const float* slab, int64_t cg, const ConvGeometry& g, int64_t p0, int64_t p1,
            float* col) {
  const auto& in = g.in;
  const auto& k = g.kernel;
  const int64_t kvol = k[0] * k[1] * k[2];
  const int64_t row_len = cg * kvol;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1], od = p / (g.out[2] * g.out[1]);
    float* row = col + (p - p0) * row_len;
    for (int64_t c = 0; c < cg; ++c) {
      const float* plane = slab + c * in[0] * in[1] * in[2];
      for (int64_t kd = 0; kd < k[0]; ++kd) {
        const int64_t id = od * g.stride[0] - g.pad_before[0] + kd * g.dilation[0];
        for (int64_t kh = 0; kh < k[1]; ++kh) {
          const int64_t ih = oh * g.stride[1] - g.pad_before[1] + kh * g.dilation[1];
          for (int64_t kw = 0; kw < k[2]; ++kw) {
            const int64_t iw = ow * g.stride[2] - g.pad_before[2] + kw * g.dilation[2];
            const bool inside = id >= 0 && id < in[0] && ih >= 0 && ih < in[1] && iw >= 0 && iw < in[2];
            *row++ = inside ? plane[(id * in[1] + ih) * in[2] + iw] : 0.0f;
          }
        }
      }
    }
  }
}

bool is_pointwise(const ConvGeometry& g) {
  for (int i = 0; i < kMaxSpatial; ++i) {
    if (g.kernel[static_cast<size_t>(i)] != 1 || g.stride[static_cast<size_t>(i)] != 1 ||
        g.pad_before[static_cast<size_t>(i)] != 0 || g.out[static_cast<size_t>(i)] != g.in[static_cast<size_t>(i)]) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status op_conv(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(WeightOperand weight, WeightOperand::get(ctx, "weight"));
  SG_ASSIGN_OR_RETURN(int64_t groups, ctx.get_int_or("groups", 1));
  SG_OP_CHECK(ctx, x.rank() >= 3 && x.rank() <= 2 + kMaxSpatial, ErrorCode::kShape,
              "x must be [N, C_in, *spatial] with 1 to 3 spatial dims, got {}", shape_str(x.shape()));
  SG_OP_CHECK(ctx, weight.rank() == x.rank(), ErrorCode::kShape,
              "weight {} must have the rank of x {} ([C_out, C_in/groups, *K])",
              shape_str(weight.shape()), shape_str(x.shape()));
  const int64_t N = x.dim(0), C_in = x.dim(1), C_out = weight.dim(0);
  SG_OP_CHECK(ctx, groups >= 1 && C_in % groups == 0 && C_out % groups == 0, ErrorCode::kShape,
              "groups {} must divide C_in {} and C_out {}", groups, C_in, C_out);
  const int64_t cg = C_in / groups, og = C_out / groups;
  SG_OP_CHECK(ctx, weight.dim(1) == cg, ErrorCode::kShape,
              "weight {} has {} input channels per group, x {} with groups {} needs {}",
              shape_str(weight.shape()), weight.dim(1), shape_str(x.shape()), groups, cg);
  ConvGeometry g;
  SG_TRY(resolve_geometry(ctx, x, weight.shape(), g));
  Tensor bias;
  if (ctx.has("bias")) {
    SG_ASSIGN_OR_RETURN(bias, ctx.get_f32("bias"));
    SG_OP_CHECK(ctx, bias.numel() == C_out, ErrorCode::kShape,
                "bias has shape {}, expected {} elements (C_out)", shape_str(bias.shape()), C_out);
  }

  Shape out_shape = {N, C_out};
  for (int i = kMaxSpatial - g.spatial; i < kMaxSpatial; ++i) out_shape.push_back(g.out[static_cast<size_t>(i)]);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  const int64_t P = g.out[0] * g.out[1] * g.out[2];
  const int64_t in_vol = g.in[0] * g.in[1] * g.in[2];
  const int64_t kvol = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t row_len = cg * kvol;
  if (N == 0 || C_out == 0 || P == 0) {
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  SG_ASSIGN_OR_RETURN(WeightRows all_rows, weight.rows());  // [C_out, row_len]
  const size_t esize = all_rows.dtype == DType::kF16 ? 2 : 4;

  const bool pointwise = is_pointwise(g);
  const int64_t chunk =
      std::min(P, std::max<int64_t>(8, kColumnBudget / std::max<int64_t>(row_len, 1)));
  std::vector<float> col(static_cast<size_t>(chunk * row_len));
  std::vector<float> res(static_cast<size_t>(chunk * og));
  const float* xd = x.data<float>();
  float* od = out.mutable_data<float>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float* slab = xd + (n * C_in + gi * cg) * in_vol;
      WeightRows rows = all_rows;
      rows.n = og;
      if (rows.stream != nullptr) {
        rows.row0 = gi * og;
      } else {
        rows.data = static_cast<const std::byte*>(all_rows.data) +
                    static_cast<size_t>(gi * og * row_len) * esize;
      }
      const float* b = bias.defined() ? bias.data<float>() + gi * og : nullptr;
      for (int64_t p0 = 0; p0 < P; p0 += chunk) {
        const int64_t p1 = std::min(P, p0 + chunk);
        if (pointwise) {
          // Columns of a 1×1 conv: position p's row is the channel vector x[n, g, :, p].
          transpose_copy(slab + p0, cg, p1 - p0, in_vol, col.data());
        } else {
          im2col(slab, cg, g, p0, p1, col.data());
        }
        gemm_x_wt(col.data(), p1 - p0, row_len, rows, b, res.data(), og);
        for (int64_t o = 0; o < og; ++o) {
          float* dst = od + (n * C_out + gi * og + o) * P;
          for (int64_t p = p0; p < p1; ++p) dst[p] = res[static_cast<size_t>((p - p0) * og + o)];
        }
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
