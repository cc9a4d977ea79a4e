// Kernels of the "linear" family: linear, matmul, einsum (runtime/ops/README.md, Linear algebra).
// All three reduce to gemm_x_wt() (linear_kernel.h); this file only maps shapes, transposes and
// broadcasting onto it. linear's weight and matmul's transposed rank-2 y may arrive as streamed
// weights.
#include "core/parallel.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/linear_kernel.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace sg {
namespace {

// Flat offset (in elements) of each batch matrix of a broadcast operand, for every flat batch
// index of the output; `block` is the size of one matrix of the operand.
std::vector<int64_t> batch_offsets(const Shape& out, const Shape& in, int64_t block) {
  const std::vector<int64_t> strides = kern::broadcast_strides(in, out);
  const int64_t count = numel(out);
  std::vector<int64_t> offs(static_cast<size_t>(count), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i;
    int64_t off = 0;
    for (size_t d = out.size(); d-- > 0;) {
      off += (rem % out[d]) * strides[d];
      rem /= out[d];
    }
    offs[static_cast<size_t>(i)] = off * block;
  }
  return offs;
}

Result<Tensor> optional_bias(OpContext& ctx, int64_t n) {
  if (!ctx.has("bias")) return Tensor();
  SG_ASSIGN_OR_RETURN(Tensor bias, ctx.get_f32("bias"));
  SG_OP_CHECK(ctx, bias.numel() == n, ErrorCode::kShape,
              "bias has shape {}, expected {} elements (one per output channel)",
              shape_str(bias.shape()), n);
  return bias;
}

}  // namespace

Status op_linear(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  // fp16 storage in and out (the executor's fp16 modes, an fp16-declared output): the product
  // reads x and writes y as fp16 (gemm_x_wt_f16io), the bits of widening x, multiplying and
  // rounding y at the executor's store, without the two fp32 copies.
  const bool f16io = x.dtype() == DType::kF16 && stores_fp16(ctx.precision()) &&
                     ctx.op().outputs.size() == 1 && ctx.op().outputs[0].type.dtype == DType::kF16;
  if (!f16io) {
    SG_ASSIGN_OR_RETURN(x, ctx.get_f32("x"));
  }
  SG_ASSIGN_OR_RETURN(WeightOperand weight, WeightOperand::get(ctx, "weight"));
  SG_OP_CHECK(ctx, x.rank() >= 1, ErrorCode::kShape, "x must have rank >= 1, got a scalar");
  SG_OP_CHECK(ctx, weight.rank() == 2, ErrorCode::kShape,
              "weight must be rank 2 [D_out, D_in], got {}", shape_str(weight.shape()));
  const int64_t d_in = x.dim(x.rank() - 1);
  const int64_t d_out = weight.dim(0);
  SG_OP_CHECK(ctx, weight.dim(1) == d_in, ErrorCode::kShape,
              "weight {} does not match x {}: D_in {} != {}", shape_str(weight.shape()),
              shape_str(x.shape()), weight.dim(1), d_in);
  SG_ASSIGN_OR_RETURN(Tensor bias, optional_bias(ctx, d_out));

  Shape out_shape = x.shape();
  out_shape.back() = d_out;
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, f16io ? DType::kF16 : DType::kF32, out_shape));
  SG_ASSIGN_OR_RETURN(WeightRows w, weight.rows());
  const int64_t m = numel(Shape(x.shape().begin(), x.shape().end() - 1));
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  if (f16io) {
    gemm_x_wt_f16io(x.data<uint16_t>(), m, d_in, w, b, out.mutable_data<uint16_t>(), d_out);
  } else {
    gemm_x_wt(x.data<float>(), m, d_in, w, b, out.mutable_data<float>(), d_out);
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_matmul(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(bool tx, ctx.get_bool_or("transpose_x", false));
  SG_ASSIGN_OR_RETURN(bool ty, ctx.get_bool_or("transpose_y", false));
  // A compressed [N, K] weight read with transpose_y (a tied LM head: x · embeddingᵀ) is
  // streamed into the product like linear's weight; other shapes are decoded whole.
  std::optional<StreamedWeight> stream;
  Tensor y;
  if (ty) {
    SG_ASSIGN_OR_RETURN(stream, ctx.get_streamed("y", {.min = 2, .max = 2}));
  }
  if (!stream.has_value()) {
    SG_ASSIGN_OR_RETURN(y, ctx.get("y"));
  }
  const Shape y_shape = stream.has_value() ? stream->shape : y.shape();
  const int64_t y_rank = static_cast<int64_t>(y_shape.size());
  SG_OP_CHECK(ctx, x.rank() >= 1 && y_rank >= 1, ErrorCode::kShape,
              "x and y must have rank >= 1, got {} and {}", shape_str(x.shape()),
              shape_str(y_shape));
  SG_OP_CHECK(ctx, !(x.rank() == 1 && tx), ErrorCode::kShape, "x is rank 1 but transpose_x is true");
  SG_OP_CHECK(ctx, !(y_rank == 1 && ty), ErrorCode::kShape, "y is rank 1 but transpose_y is true");
  if (!stream.has_value() && y.dtype() != DType::kF16 && y.dtype() != DType::kF32) {
    SG_ASSIGN_OR_RETURN(y, ctx.get_f32("y"));
  }

  // numpy promotion: rank-1 x gains a leading 1, rank-1 y a trailing 1; both are dropped again.
  Shape xs = x.shape();
  Shape ys = y_shape;
  if (x.rank() == 1) xs.insert(xs.begin(), 1);
  if (y_rank == 1) ys.push_back(1);
  const int64_t x_rows = xs[xs.size() - 2], x_cols = xs.back();
  const int64_t y_rows = ys[ys.size() - 2], y_cols = ys.back();
  const int64_t M = tx ? x_cols : x_rows;
  const int64_t K = tx ? x_rows : x_cols;
  const int64_t Ky = ty ? y_cols : y_rows;
  const int64_t N = ty ? y_rows : y_cols;
  SG_OP_CHECK(ctx, K == Ky, ErrorCode::kShape,
              "inner dimensions differ: x {} (transpose_x={}) and y {} (transpose_y={})",
              shape_str(x.shape()), tx, shape_str(y_shape), ty);
  const Shape xb(xs.begin(), xs.end() - 2);
  const Shape yb(ys.begin(), ys.end() - 2);
  SG_ASSIGN_OR_RETURN(Shape ob, kern::broadcast_shapes(ctx, {xb, yb}));

  Shape out_shape = ob;
  if (x.rank() > 1) out_shape.push_back(M);
  if (y_rank > 1) out_shape.push_back(N);
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::kF32, out_shape));
  const int64_t batches = numel(ob);
  if (batches == 0 || M == 0 || N == 0) {
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }

  // x as [M, K] rows per x batch (transposed copies when needed).
  const int64_t xb_count = numel(xb);
  const float* xdata = x.data<float>();
  std::vector<float> xt;
  if (tx) {
    xt.resize(static_cast<size_t>(x.numel()));
    for (int64_t b = 0; b < xb_count; ++b) {
      transpose_copy(xdata + b * K * M, K, M, M, xt.data() + b * K * M);
    }
    xdata = xt.data();
  }
  // y as [N, K] rows per y batch: in place when transpose_y, else a transposed copy that keeps
  // y's dtype (fp16 stays fp16; the transposition is exact).
  const int64_t yb_count = numel(yb);
  const DType y_dtype = stream.has_value() ? stream->dtype : y.dtype();
  const size_t esize = y_dtype == DType::kF16 ? 2 : 4;
  const std::byte* ydata = stream.has_value() ? nullptr : y.raw();
  std::vector<std::byte> yt;
  if (!ty) {
    yt.resize(static_cast<size_t>(y.numel()) * esize);
    for (int64_t b = 0; b < yb_count; ++b) {
      if (esize == 2) {
        transpose_copy(y.data<uint16_t>() + b * K * N, K, N, N,
                       reinterpret_cast<uint16_t*>(yt.data()) + b * K * N);
      } else {
        transpose_copy(y.data<float>() + b * K * N, K, N, N,
                       reinterpret_cast<float*>(yt.data()) + b * K * N);
      }
    }
    ydata = yt.data();
  }
  float* o = out.mutable_data<float>();
  if (yb.empty()) {
    // One y matrix for every batch (a weight): the batches' x rows are contiguous, so a single
    // product reads (or decodes) y once. Each output's sum is the same as per batch.
    WeightRows w{y_dtype, ydata, N, K, K};
    if (stream.has_value()) w.stream = &*stream;
    gemm_x_wt(xdata, batches * M, K, w, nullptr, o, N);
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  const std::vector<int64_t> xo = batch_offsets(ob, xb, M * K);
  const std::vector<int64_t> yo = batch_offsets(ob, yb, N * K);
  for (int64_t b = 0; b < batches; ++b) {
    const WeightRows w{y_dtype, ydata + static_cast<size_t>(yo[static_cast<size_t>(b)]) * esize,
                       N, K, K};
    gemm_x_wt(xdata + xo[static_cast<size_t>(b)], M, K, w, nullptr, o + b * M * N, N);
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

namespace {

// Accepts "nchw,nwhu->nchu" and "chw,whr->chr" up to a renaming of the letters.
bool einsum_equation_ok(std::string eq, int rank) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const size_t comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return false;
  const std::string a = eq.substr(0, comma);
  const std::string b = eq.substr(comma + 1, arrow - comma - 1);
  const std::string o = eq.substr(arrow + 2);
  if (static_cast<int>(a.size()) != rank || b.size() != a.size() || o.size() != a.size()) {
    return false;
  }
  // Canonical patterns over letters p q r s t: rank 4 pqrs,psrt->pqrt; rank 3 qrs,srt->qrt.
  const std::string ca = rank == 4 ? "pqrs" : "qrs";
  const std::string cb = rank == 4 ? "psrt" : "srt";
  const std::string co = rank == 4 ? "pqrt" : "qrt";
  std::string map(128, '\0');  // canonical letter -> equation letter
  std::string used;
  auto bind = [&](char canon, char actual) {
    const auto ci = static_cast<unsigned char>(canon);
    if (map[ci] == '\0') {
      if (used.find(actual) != std::string::npos) return false;
      map[ci] = actual;
      used.push_back(actual);
      return true;
    }
    return map[ci] == actual;
  };
  for (size_t i = 0; i < a.size(); ++i) {
    if (!bind(ca[i], a[i]) || !bind(cb[i], b[i]) || !bind(co[i], o[i])) return false;
  }
  return true;
}

}  // namespace

Status op_einsum(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> values, ctx.get_all("values"));
  SG_ASSIGN_OR_RETURN(std::string equation, ctx.get_string("equation"));
  SG_OP_CHECK(ctx, values.size() == 2, ErrorCode::kShape, "values must hold 2 tensors, got {}",
              values.size());
  SG_ASSIGN_OR_RETURN(Tensor x, to_f32(values[0]));
  SG_ASSIGN_OR_RETURN(Tensor y, to_f32(values[1]));
  const int64_t rank = x.rank();
  SG_OP_CHECK(ctx, (rank == 3 || rank == 4) && y.rank() == rank, ErrorCode::kShape,
              "einsum needs two tensors of rank 3 or 4, got {} and {}", shape_str(x.shape()),
              shape_str(y.shape()));
  SG_OP_CHECK(ctx, einsum_equation_ok(equation, static_cast<int>(rank)), ErrorCode::kUnsupported,
              "einsum equation '{}' is not supported (only nchw,nwhu->nchu and chw,whr->chr)",
              equation);
  // View both as rank 4 [B, C, H, W1] and [B, W1, H, W2].
  Shape xs = x.shape(), ys = y.shape();
  if (rank == 3) {
    xs.insert(xs.begin(), 1);
    ys.insert(ys.begin(), 1);
  }
  const int64_t C = xs[1], W1 = xs[3], W2 = ys[3];
  SG_OP_CHECK(ctx, ys[1] == W1, ErrorCode::kShape, "contracted dims differ: x {} vs y {}",
              shape_str(x.shape()), shape_str(y.shape()));
  auto bdim = [](int64_t a, int64_t b, int64_t& out) {
    if (a != b && a != 1 && b != 1) return false;
    out = a == 1 ? b : a;
    return true;
  };
  int64_t B = 0, H = 0;
  SG_OP_CHECK(ctx, bdim(xs[0], ys[0], B) && bdim(xs[2], ys[2], H), ErrorCode::kShape,
              "batch dims of x {} and y {} do not broadcast", shape_str(x.shape()),
              shape_str(y.shape()));
  Shape out_shape = {B, C, H, W2};
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::kF32, out_shape));
  std::vector<float> wt(static_cast<size_t>(W1 * W2));
  float* o = out.mutable_data<float>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t bx = xs[0] == 1 ? 0 : b, by = ys[0] == 1 ? 0 : b;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hx = xs[2] == 1 ? 0 : h, hy = ys[2] == 1 ? 0 : h;
      // y[b, :, h, :] is [W1, W2] with rows H·W2 apart; gemm wants it as [W2, W1].
      transpose_copy(y.data<float>() + (by * W1 * ys[2] + hy) * W2, W1, W2, ys[2] * W2, wt.data());
      const float* xrow = x.data<float>() + (bx * C * xs[2] + hx) * W1;
      WeightRows w{DType::kF32, wt.data(), W2, W1, W1};
      gemm_x_wt(xrow, C, xs[2] * W1, w, nullptr, o + (b * C * H + h) * W2, H * W2);
    }
  }
  if (rank == 3) {
    SG_ASSIGN_OR_RETURN(out, out.reshaped({C, H, W2}));
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
