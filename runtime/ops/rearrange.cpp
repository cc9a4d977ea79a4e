// Rearrangement ops: elements move, values never change (any byte-addressable dtype).
// Semantics from coremltools 9.0 defs (iOS15/iOS16/iOS17 tensor_transformation.py):
//   depth_to_space / space_to_depth  TensorFlow's order on NCHW ("DCR"): the channel of an
//                                    output pixel is (i * bs + j) * C_small + c;
//   pixel_shuffle / pixel_unshuffle  PyTorch's order ("CRD"): channel c * f * f + i * f + j;
//   space_to_batch / batch_to_space  TensorFlow's *_nd on NCHW with 2 spatial dims: padded pixel
//                                    (h * bh + i, w * bw + j) of image n goes to batch
//                                    (i * bw + j) * N + n;
//   sliding_windows, reverse_sequence (tf.reverse_sequence), reshape_like.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cstring>

namespace sg {
namespace {

using kern::normalize_axis;

// out[c] = x[src(c)] for every output coordinate c; src returns -1 for a zero element.
template <typename F>
Result<Tensor> move_elements(const OpContext& ctx, const Tensor& x, const Shape& out_shape, F src) {
  const size_t es = kern::element_size(x.dtype());
  SG_OP_CHECK(ctx, es > 0, ErrorCode::kUnsupported, "cannot move elements of dtype {}",
              dtype_name(x.dtype()));
  // Elements whose source is -1 (padding) are the zeros of the fresh tensor.
  SG_ASSIGN_OR_RETURN(Tensor out, kern::zeros_tensor(ctx, x.dtype(), out_shape));
  std::vector<int64_t> c(out_shape.size(), 0);
  std::byte* dst = out.mutable_raw();
  const std::byte* in = x.raw();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t s = src(c);
    if (s >= 0) std::memcpy(dst + static_cast<size_t>(i) * es, in + static_cast<size_t>(s) * es, es);
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < out_shape[d]) break;
      c[d] = 0;
    }
  }
  return out;
}

Result<Tensor> rank4(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.rank() == 4, ErrorCode::kShape, "x has shape {}: needs rank 4 [N, C, H, W]",
              shape_str(x.shape()));
  return x;
}

Result<int64_t> factor(OpContext& ctx, const char* name) {
  SG_ASSIGN_OR_RETURN(int64_t f, ctx.get_int(name));
  SG_OP_CHECK(ctx, f >= 1 && f <= 4096, ErrorCode::kShape, "{} = {} must be in [1, 4096]", name, f);
  return f;
}

// Channels to space: out [N, C / (f*f), H*f, W*f]. dcr: TF order, else PyTorch order.
Status channels_to_space(OpContext& ctx, const char* param, bool dcr) {
  SG_ASSIGN_OR_RETURN(Tensor x, rank4(ctx));
  SG_ASSIGN_OR_RETURN(int64_t f, factor(ctx, param));
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  SG_OP_CHECK(ctx, C % (f * f) == 0, ErrorCode::kShape,
              "x has {} channels, not divisible by {}^2 = {} ({} = {})", C, f, f * f, param, f);
  const int64_t Co = C / (f * f);
  SG_ASSIGN_OR_RETURN(Tensor out, move_elements(ctx, x, {N, Co, H * f, W * f}, [&](const auto& c) {
    const int64_t i = c[2] % f, j = c[3] % f;
    const int64_t ch = dcr ? (i * f + j) * Co + c[1] : c[1] * f * f + i * f + j;
    return ((c[0] * C + ch) * H + c[2] / f) * W + c[3] / f;
  }));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// Space to channels: out [N, C*f*f, H/f, W/f], the inverse of channels_to_space.
Status space_to_channels(OpContext& ctx, const char* param, bool dcr) {
  SG_ASSIGN_OR_RETURN(Tensor x, rank4(ctx));
  SG_ASSIGN_OR_RETURN(int64_t f, factor(ctx, param));
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  SG_OP_CHECK(ctx, H % f == 0 && W % f == 0, ErrorCode::kShape,
              "x has spatial size {}x{}, not divisible by {} = {}", H, W, param, f);
  const int64_t Ho = H / f, Wo = W / f;
  SG_ASSIGN_OR_RETURN(Tensor out, move_elements(ctx, x, {N, C * f * f, Ho, Wo}, [&](const auto& c) {
    int64_t ch, i, j;
    if (dcr) {
      ch = c[1] % C;
      i = (c[1] / C) / f;
      j = (c[1] / C) % f;
    } else {
      ch = c[1] / (f * f);
      i = (c[1] / f) % f;
      j = c[1] % f;
    }
    return ((c[0] * C + ch) * H + c[2] * f + i) * W + c[3] * f + j;
  }));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// block_shape [2] and a [2, 2] table (paddings / crops), all checked.
Status block_params(OpContext& ctx, const char* table_name, std::vector<int64_t>& block,
                    std::vector<int64_t>& table) {
  SG_ASSIGN_OR_RETURN(block, ctx.get_ints("block_shape"));
  SG_ASSIGN_OR_RETURN(Tensor t, ctx.get(table_name));
  SG_OP_CHECK(ctx, block.size() == 2, ErrorCode::kShape,
              "block_shape {} must have 2 entries (H and W)", kern::ints_str(block));
  SG_OP_CHECK(ctx, t.shape() == (Shape{2, 2}), ErrorCode::kShape, "{} has shape {}, expected [2, 2]",
              table_name, shape_str(t.shape()));
  SG_ASSIGN_OR_RETURN(table, to_int64_vector(t));
  for (int64_t b : block) {
    SG_OP_CHECK(ctx, b >= 1 && b <= 4096, ErrorCode::kShape, "block_shape {} must hold values in [1, 4096]",
                kern::ints_str(block));
  }
  for (int64_t p : table) {
    SG_OP_CHECK(ctx, p >= 0 && p <= (int64_t{1} << 24), ErrorCode::kShape,
                "{} {} must hold values in [0, 2^24]", table_name, kern::ints_str(table));
  }
  return Status::ok();
}

}  // namespace

Status op_depth_to_space(OpContext& ctx) { return channels_to_space(ctx, "block_size", true); }
Status op_pixel_shuffle(OpContext& ctx) { return channels_to_space(ctx, "upscale_factor", false); }
Status op_space_to_depth(OpContext& ctx) { return space_to_channels(ctx, "block_size", true); }
Status op_pixel_unshuffle(OpContext& ctx) { return space_to_channels(ctx, "downscale_factor", false); }

Status op_space_to_batch(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, rank4(ctx));
  std::vector<int64_t> b, pad;
  SG_TRY(block_params(ctx, "paddings", b, pad));
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t Hp = H + pad[0] + pad[1], Wp = W + pad[2] + pad[3];
  SG_OP_CHECK(ctx, Hp % b[0] == 0 && Wp % b[1] == 0, ErrorCode::kShape,
              "padded spatial size {}x{} is not divisible by block_shape {}", Hp, Wp,
              kern::ints_str(b));
  SG_ASSIGN_OR_RETURN(Tensor out, move_elements(ctx, x, {N * b[0] * b[1], C, Hp / b[0], Wp / b[1]},
                                                [&](const auto& c) -> int64_t {
    const int64_t n = c[0] % N, blk = c[0] / N;
    const int64_t h = c[2] * b[0] + blk / b[1] - pad[0];
    const int64_t w = c[3] * b[1] + blk % b[1] - pad[2];
    if (h < 0 || h >= H || w < 0 || w >= W) return -1;  // padding is zeros
    return ((n * C + c[1]) * H + h) * W + w;
  }));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_batch_to_space(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, rank4(ctx));
  std::vector<int64_t> b, crop;
  SG_TRY(block_params(ctx, "crops", b, crop));
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  SG_OP_CHECK(ctx, N % (b[0] * b[1]) == 0, ErrorCode::kShape,
              "batch {} is not divisible by the block size {}", N, b[0] * b[1]);
  const int64_t No = N / (b[0] * b[1]);
  const int64_t Ho = H * b[0] - crop[0] - crop[1], Wo = W * b[1] - crop[2] - crop[3];
  SG_OP_CHECK(ctx, Ho >= 0 && Wo >= 0, ErrorCode::kShape, "crops {} remove more than the {}x{} output",
              kern::ints_str(crop), H * b[0], W * b[1]);
  SG_ASSIGN_OR_RETURN(Tensor out, move_elements(ctx, x, {No, C, Ho, Wo}, [&](const auto& c) {
    const int64_t h = c[2] + crop[0], w = c[3] + crop[2];
    const int64_t blk = (h % b[0]) * b[1] + w % b[1];
    return (((blk * No + c[0]) * C + c[1]) * H + h / b[0]) * W + w / b[1];
  }));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_sliding_windows(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.rank() >= 1, ErrorCode::kShape, "x is a scalar: nothing to slide over");
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int("axis"));
  SG_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_in, x.rank(), "axis"));
  SG_ASSIGN_OR_RETURN(int64_t size, ctx.get_int("size"));
  SG_ASSIGN_OR_RETURN(int64_t stride, ctx.get_int_or("stride", 1));
  const int64_t len = x.dim(axis);
  SG_OP_CHECK(ctx, size >= 1 && size <= len, ErrorCode::kShape,
              "size {} must be in [1, {}] (the length of axis {})", size, len, axis);
  SG_OP_CHECK(ctx, stride >= 1, ErrorCode::kShape, "stride {} must be >= 1", stride);
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = (len - size) / stride + 1;
  out_shape.insert(out_shape.begin() + axis + 1, size);
  const std::vector<int64_t> st = kern::strides_of(x.shape());
  SG_ASSIGN_OR_RETURN(Tensor out, move_elements(ctx, x, out_shape, [&](const auto& c) {
    int64_t s = 0;
    for (int64_t d = 0, od = 0; d < x.rank(); ++d, ++od) {
      if (d == axis) {
        s += (c[od] * stride + c[od + 1]) * st[d];
        ++od;
      } else {
        s += c[od] * st[d];
      }
    }
    return s;
  }));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_reverse_sequence(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(Tensor lengths_t, ctx.get("lengths"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, to_int64_vector(lengths_t));
  SG_ASSIGN_OR_RETURN(int64_t seq_in, ctx.get_int_or("seq_axis", 0));
  SG_ASSIGN_OR_RETURN(int64_t batch_in, ctx.get_int_or("batch_axis", 0));
  SG_OP_CHECK(ctx, x.rank() >= 2, ErrorCode::kShape, "x has shape {}: needs a batch and a sequence axis",
              shape_str(x.shape()));
  SG_ASSIGN_OR_RETURN(int64_t seq, normalize_axis(ctx, seq_in, x.rank(), "seq_axis"));
  SG_ASSIGN_OR_RETURN(int64_t batch, normalize_axis(ctx, batch_in, x.rank(), "batch_axis"));
  SG_OP_CHECK(ctx, seq != batch, ErrorCode::kShape, "seq_axis and batch_axis are both axis {}", seq);
  SG_OP_CHECK(ctx, lengths_t.rank() == 1 && lengths_t.dim(0) == x.dim(batch), ErrorCode::kShape,
              "lengths has shape {}, expected [{}] (x {} along batch_axis {})",
              shape_str(lengths_t.shape()), x.dim(batch), shape_str(x.shape()), batch);
  for (size_t i = 0; i < lengths.size(); ++i) {
    SG_OP_CHECK(ctx, lengths[i] >= 0 && lengths[i] <= x.dim(seq), ErrorCode::kShape,
                "lengths[{}] = {} is outside [0, {}]", i, lengths[i], x.dim(seq));
  }
  const std::vector<int64_t> st = kern::strides_of(x.shape());
  SG_ASSIGN_OR_RETURN(Tensor out, move_elements(ctx, x, x.shape(), [&](const auto& c) {
    const int64_t n = lengths[static_cast<size_t>(c[batch])];
    int64_t s = 0;
    for (int64_t d = 0; d < x.rank(); ++d) {
      const int64_t k = (d == seq && c[d] < n) ? n - 1 - c[d] : c[d];
      s += k * st[d];
    }
    return s;
  }));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_reshape_like(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> refs, ctx.get_all("ref_tensors"));
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> begins, ctx.get_all("begins"));
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> ends, ctx.get_all("ends"));
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> masks, ctx.get_all("end_masks"));
  SG_OP_CHECK(ctx, !refs.empty() && begins.size() == refs.size() && ends.size() == refs.size() &&
                       masks.size() == refs.size(),
              ErrorCode::kShape,
              "ref_tensors, begins, ends and end_masks must have one entry each per reference "
              "(got {}, {}, {}, {})", refs.size(), begins.size(), ends.size(), masks.size());
  Shape shape;
  for (size_t i = 0; i < refs.size(); ++i) {
    SG_OP_CHECK(ctx, begins[i].numel() == 1 && ends[i].numel() == 1 && masks[i].numel() == 1,
                ErrorCode::kShape, "begins[{}], ends[{}] and end_masks[{}] must be scalars", i, i, i);
    const int64_t r = refs[i].rank();
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> bv, to_int64_vector(begins[i]));
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> ev, to_int64_vector(ends[i]));
    const int64_t b = bv[0];
    const bool to_end = element_as_double(masks[i], 0) != 0;
    const int64_t e = to_end ? r : ev[0];
    SG_OP_CHECK(ctx, b >= 0 && b <= e && e <= r, ErrorCode::kShape,
                "ref_tensors[{}] has rank {}: begin {} / end {} select no valid dims", i, r, b, e);
    for (int64_t d = b; d < e; ++d) shape.push_back(refs[i].dim(d));
  }
  SG_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  SG_OP_CHECK(ctx, n == x.numel(), ErrorCode::kShape, "x has {} elements ({}), the shape {} has {}",
              x.numel(), shape_str(x.shape()), shape_str(shape), n);
  SG_ASSIGN_OR_RETURN(Tensor out, x.reshaped(shape));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
