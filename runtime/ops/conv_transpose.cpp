// conv_transpose (coremltools 9.0 iOS15/iOS17 conv.py): x [N, C_in, *D] (1-3 spatial dims),
// weight [C_in, C_out / groups, *K], optional bias [C_out]. Every input element scatters
// x * w into the "full" output at o * stride + k * dilation; the result is that full output
// cropped by the leading pad of the pad type and cut (or zero-extended) to the output size:
//   valid   size (D - 1) * stride + K_eff, nothing cropped
//   custom  size (D - 1) * stride + K_eff - pad[2i] - pad[2i+1], pad[2i] cropped in front
//   same    size D * stride (or output_shape's), max(full - size, 0) / 2 cropped in front:
//           TensorFlow's conv2d_transpose, whose SAME padding is the forward conv's over the
//           output size; coremltools' TF frontend passes that size as output_shape. Without
//           output_shape this is max(K_eff - stride, 0) / 2.
// output_shape, when given, fixes the spatial size (valid and custom keep their crop).
// Accumulation in double over (input channel, tap) per output element, stored via fp32.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>

namespace sg {

Status op_conv_transpose(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(Tensor w, ctx.get_f32("weight"));
  const int64_t S = x.rank() - 2;
  SG_OP_CHECK(ctx, S >= 1 && S <= 3, ErrorCode::kShape, "x has shape {}: needs [N, C_in] and 1 to 3 spatial dims",
              shape_str(x.shape()));
  SG_OP_CHECK(ctx, w.rank() == x.rank(), ErrorCode::kShape,
              "weight has shape {}, expected [C_in, C_out / groups, *K] of rank {}", shape_str(w.shape()),
              x.rank());
  SG_ASSIGN_OR_RETURN(int64_t groups, ctx.get_int_or("groups", 1));
  const int64_t N = x.dim(0), Cin = x.dim(1);
  SG_OP_CHECK(ctx, groups >= 1 && Cin % groups == 0, ErrorCode::kShape,
              "groups {} must divide the {} input channels", groups, Cin);
  SG_OP_CHECK(ctx, w.dim(0) == Cin, ErrorCode::kShape, "weight has shape {}: dim 0 must be C_in = {}",
              shape_str(w.shape()), Cin);
  const int64_t og = w.dim(1), Cout = og * groups, cg = Cin / groups;
  const auto n = static_cast<size_t>(S);
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ctx.get_ints_or("strides", std::vector<int64_t>(n, 1)));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> dil, ctx.get_ints_or("dilations", std::vector<int64_t>(n, 1)));
  SG_ASSIGN_OR_RETURN(std::string pad_type, ctx.get_string_or("pad_type", "valid"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> pad, ctx.get_ints_or("pad", std::vector<int64_t>(2 * n, 0)));
  SG_OP_CHECK(ctx, strides.size() == n && dil.size() == n && pad.size() == 2 * n, ErrorCode::kShape,
              "strides {}, dilations {} need {} entries and pad {} needs {}", kern::ints_str(strides),
              kern::ints_str(dil), S, kern::ints_str(pad), 2 * S);
  SG_OP_CHECK(ctx, pad_type == "valid" || pad_type == "same" || pad_type == "custom", ErrorCode::kShape,
              "pad_type '{}' is not one of valid, same, custom", pad_type);
  Tensor bias;
  if (ctx.has("bias")) {
    SG_ASSIGN_OR_RETURN(bias, ctx.get_f32("bias"));
    SG_OP_CHECK(ctx, bias.numel() == Cout, ErrorCode::kShape, "bias has {} values, expected C_out = {}",
                bias.numel(), Cout);
  }
  std::vector<int64_t> given;
  if (ctx.has("output_shape")) {
    SG_ASSIGN_OR_RETURN(given, ctx.get_ints("output_shape"));
    SG_OP_CHECK(ctx, static_cast<int64_t>(given.size()) == x.rank() && given[0] == N && given[1] == Cout,
                ErrorCode::kShape, "output_shape {} must be [N = {}, C_out = {}, *spatial]",
                kern::ints_str(given), N, Cout);
  }
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, front[3] = {0, 0, 0},
          out[3] = {1, 1, 1};
  Shape out_shape{N, Cout};
  for (size_t i = 0; i < n; ++i) {
    const size_t j = 3 - n + i;
    in[j] = x.dim(2 + static_cast<int64_t>(i));
    k[j] = w.dim(2 + static_cast<int64_t>(i));
    st[j] = strides[i];
    dl[j] = dil[i];
    SG_OP_CHECK(ctx, st[j] >= 1 && dl[j] >= 1 && st[j] <= (1 << 20) && dl[j] <= (1 << 20), ErrorCode::kShape,
                "strides {} and dilations {} must be in [1, 2^20]", kern::ints_str(strides), kern::ints_str(dil));
    const int64_t k_eff = (k[j] - 1) * dl[j] + 1;
    const int64_t full = (in[j] - 1) * st[j] + k_eff;
    if (pad_type == "valid") {
      out[j] = full;
    } else if (pad_type == "custom") {
      SG_OP_CHECK(ctx, pad[2 * i] >= 0 && pad[2 * i + 1] >= 0, ErrorCode::kShape, "pad {} must be >= 0",
                  kern::ints_str(pad));
      front[j] = pad[2 * i];
      out[j] = full - pad[2 * i] - pad[2 * i + 1];
    } else {
      out[j] = in[j] * st[j];
    }
    if (!given.empty()) out[j] = given[2 + i];
    // same: the forward conv from out[j] to in[j] pads max(full - out, 0) in total, the smaller
    // half in front; it depends on the size, so it comes after output_shape.
    if (pad_type == "same") front[j] = std::max<int64_t>(full - out[j], 0) / 2;
    SG_OP_CHECK(ctx, out[j] >= 0, ErrorCode::kShape, "spatial dim {}: output size {} is negative", i, out[j]);
    out_shape.push_back(out[j]);
  }
  SG_ASSIGN_OR_RETURN(Tensor y, kern::new_tensor(ctx, DType::kF32, out_shape));
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  const float* xs = x.data<float>();
  const float* ws = w.data<float>();
  const int64_t in_vol = in[0] * in[1] * in[2], k_vol = k[0] * k[1] * k[2], out_vol = out[0] * out[1] * out[2];
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t ci = 0; ci < Cin; ++ci) {
      const int64_t g = ci / cg;
      for (int64_t p = 0; p < in_vol; ++p) {
        const double v = xs[(b * Cin + ci) * in_vol + p];
        const int64_t pi[3] = {p / (in[1] * in[2]), (p / in[2]) % in[1], p % in[2]};
        for (int64_t co = 0; co < og; ++co) {
          const float* wk = ws + (ci * og + co) * k_vol;
          double* dst = acc.data() + (b * Cout + g * og + co) * out_vol;
          for (int64_t t = 0; t < k_vol; ++t) {
            const int64_t ti[3] = {t / (k[1] * k[2]), (t / k[2]) % k[1], t % k[2]};
            int64_t o[3];
            bool inside = true;
            for (int d = 0; d < 3; ++d) {
              o[d] = pi[d] * st[d] + ti[d] * dl[d] - front[d];
              inside = inside && o[d] >= 0 && o[d] < out[d];
            }
            if (inside) dst[(o[0] * out[1] + o[1]) * out[2] + o[2]] += v * wk[t];
          }
        }
      }
    }
  }
  float* ys = y.mutable_data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t co = (i / out_vol) % Cout;
    ys[i] = static_cast<float>(acc[static_cast<size_t>(i)] + (bias.defined() ? bias.data<float>()[co] : 0.0f));
  }
  ctx.set_output(0, std::move(y));
  return Status::ok();
}

}  // namespace sg
