// Shape and data-movement ops (runtime/ops/README.md, Shape and data movement). Elements are moved
// as stored (fp16 stays fp16 bits); operands of different dtypes (an fp16 weight next to an fp32
// activation in the reference mode) are widened to fp32 first. Every index and size is validated
// before use.
#include "ops/kernel_util.h"
#include "ops/kernels.h"
#include "ops/slice_index.h"
#include "shardgate/half.h"
#include "shardgate/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace sg {
namespace {

using kern::ints_str;
using kern::new_tensor;
using kern::normalize_axis;
using kern::strides_of;

// Bytes of one element of `dtype` holding `v` (pad values, fill values).
Result<std::vector<std::byte>> element_bytes(const OpContext& ctx, DType dtype, double v) {
  Tensor scalar = Tensor::scalar_f32(static_cast<float>(v));
  if (dtype_is_integer(dtype) || dtype == DType::kBool) {
    SG_ASSIGN_OR_RETURN(Tensor wide, Tensor::zeros(DType::kF64, {}));
    wide.mutable_data<double>()[0] = v;
    scalar = wide;
  }
  auto cast = cast_tensor(scalar, dtype);
  if (!cast.is_ok()) return ctx.error(cast.status().code(), cast.status().message());
  const size_t es = kern::element_size(dtype);
  std::vector<std::byte> bytes(es);
  std::memcpy(bytes.data(), cast->raw(), es);
  return bytes;
}

// Identity offsets for dim d of an input with the given strides.
std::vector<int64_t> straight(int64_t n, int64_t stride) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i * stride;
  return v;
}

Result<std::vector<int64_t>> int_list(OpContext& ctx, const char* name) {
  SG_ASSIGN_OR_RETURN(Tensor t, ctx.get(name));
  SG_OP_CHECK(ctx, t.rank() <= 1, ErrorCode::kShape, "{} must be a scalar or 1-D list, got {}",
              name, shape_str(t.shape()));
  return ctx.get_ints(name);
}

// Indices and steps beyond +-2^48 act like +-2^48 on any real dim; clamping first keeps the
// arithmetic below free of overflow whatever a model writes.
int64_t clamp_index(int64_t v) {
  constexpr int64_t kBig = int64_t{1} << 48;
  return std::clamp<int64_t>(v, -kBig, kBig);
}


Status set(OpContext& ctx, Result<Tensor> r) {
  if (!r.is_ok()) return std::move(r).take_status();
  ctx.set_output(0, std::move(r).value());
  return Status::ok();
}

// For ops that build one offset table per output axis before copying (tile, pad): an output
// with zero elements is set right away, without tables (an axis of 2^31 entries beside an
// empty one would cost gigabytes for nothing); a non-empty one is checked against the memory
// budget, tables included, before anything is built. Returns true when the output is set.
Result<bool> set_if_empty_or_check_budget(OpContext& ctx, const Tensor& x, const Shape& out_shape,
                                          int64_t total) {
  if (total == 0) {
    if (x.dtype() == DType::kString) {
      ctx.set_output(0, Tensor::from_strings(out_shape, {}));
    } else {
      SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(x.dtype(), out_shape));
      ctx.set_output(0, std::move(out));
    }
    return true;
  }
  uint64_t bytes = dtype_storage_bytes(x.dtype(), static_cast<size_t>(total));
  for (int64_t d : out_shape) bytes += static_cast<uint64_t>(d) * sizeof(int64_t);
  SG_TRY(check_memory_budget(bytes, fmt::format("output {} of {} with its index tables",
                                                shape_str(out_shape), dtype_name(x.dtype()))));
  return false;
}

}  // namespace

Status op_band_part(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(int64_t lower, ctx.get_int_or("lower", -1));
  SG_ASSIGN_OR_RETURN(int64_t upper, ctx.get_int_or("upper", -1));
  SG_OP_CHECK(ctx, x.rank() >= 2, ErrorCode::kShape, "band_part needs rank >= 2, got {}",
              shape_str(x.shape()));
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  std::vector<std::vector<int64_t>> offsets;
  const std::vector<int64_t> st = strides_of(x.shape());
  for (int64_t d = 0; d < x.rank(); ++d) offsets.push_back(straight(x.dim(d), st[d]));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::remap(ctx, x, x.shape(), offsets));
  // Zero the elements outside the band (bytes of zero are 0 for every dtype).
  const size_t es = kern::element_size(out.dtype());
  std::byte* p = out.mutable_raw();
  const int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  for (int64_t b = 0; b < mats; ++b) {
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t n = 0; n < cols; ++n) {
        const bool keep = (lower < 0 || m - n <= lower) && (upper < 0 || n - m <= upper);
        if (!keep) std::memset(p + ((b * rows + m) * cols + n) * es, 0, es);
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_cast(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::string name, ctx.get_string("dtype"));
  static constexpr const char* kAllowed[] = {"int32", "fp16", "fp32", "bool",
                                              "int8",  "uint8", "int16", "uint16"};
  const bool allowed =
      std::any_of(std::begin(kAllowed), std::end(kAllowed), [&](const char* a) { return name == a; });
  SG_OP_CHECK(ctx, allowed, ErrorCode::kShape, "cast: dtype '{}' is not a supported target", name);
  SG_OP_CHECK(ctx, x.dtype() != DType::kString, ErrorCode::kShape, "cast: x is a string tensor");
  const DType target = *dtype_from_name(name);
  // A cast to fp16 stays fp32 here: the executor rounds it in fp16 mode, and the fp32
  // reference mode is meant to keep it exact.
  if (target == DType::kF16) return set(ctx, to_f32(x));
  auto r = cast_tensor(x, target);
  if (!r.is_ok()) return ctx.error(r.status().code(), r.status().message());
  ctx.set_output(0, std::move(r).value());
  return Status::ok();
}

Status op_concat(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> values, ctx.get_all("values"));
  SG_OP_CHECK(ctx, !values.empty(), ErrorCode::kShape, "concat needs at least one value");
  SG_ASSIGN_OR_RETURN(values, kern::unify_dtypes(ctx, std::move(values)));
  // Apple's compiler (iOS18 program(1.3)) builds shapes by joining rank-0 int32 values along
  // axis 0: `tensor<int32, [2]> c = concat(axis = 0, values = (a, b))` with a and b scalars.
  // coremltools never writes that, but both must run: when every value has rank <= 1 and some
  // have rank 0, a rank-0 value counts as a one-element vector.
  const bool any_scalar = std::any_of(values.begin(), values.end(),
                                      [](const Tensor& v) { return v.rank() == 0; });
  const bool all_vectors = std::all_of(values.begin(), values.end(),
                                       [](const Tensor& v) { return v.rank() <= 1; });
  if (any_scalar && all_vectors) {
    for (Tensor& v : values) {
      if (v.rank() == 0) {
        SG_ASSIGN_OR_RETURN(v, v.reshaped(Shape{1}));
      }
    }
  }
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int("axis"));
  SG_ASSIGN_OR_RETURN(bool interleave, ctx.get_bool_or("interleave", false));
  const Tensor& first = values.front();
  SG_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_in, first.rank(), "axis"));
  int64_t total = 0;
  for (size_t k = 0; k < values.size(); ++k) {
    const Tensor& v = values[k];
    SG_OP_CHECK(ctx, v.rank() == first.rank(), ErrorCode::kShape,
                "values[{}] has shape {}, rank differs from values[0] {}", k, shape_str(v.shape()),
                shape_str(first.shape()));
    for (int64_t d = 0; d < v.rank(); ++d) {
      SG_OP_CHECK(ctx, d == axis || v.dim(d) == first.dim(d), ErrorCode::kShape,
                  "values[{}] has shape {}, incompatible with values[0] {} outside axis {}", k,
                  shape_str(v.shape()), shape_str(first.shape()), axis);
    }
    SG_OP_CHECK(ctx, !interleave || v.shape() == first.shape(), ErrorCode::kShape,
                "interleave needs equal shapes, values[{}] is {} and values[0] {}", k,
                shape_str(v.shape()), shape_str(first.shape()));
    total += v.dim(axis);
  }
  Shape out_shape = first.shape();
  out_shape[static_cast<size_t>(axis)] = total;
  const size_t es = kern::element_size(first.dtype());
  SG_OP_CHECK(ctx, es > 0, ErrorCode::kUnsupported, "concat: cannot move dtype {}",
              dtype_name(first.dtype()));
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, first.dtype(), out_shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (int64_t d = axis + 1; d < first.rank(); ++d) inner *= first.dim(d);
  std::byte* dst = out.mutable_raw();
  if (interleave) {
    // Slices along axis alternate: a0, b0, a1, b1, ...
    const int64_t len = first.dim(axis);
    const size_t slice = static_cast<size_t>(inner) * es;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < len; ++i) {
        for (const Tensor& v : values) {
          std::memcpy(dst, v.raw() + static_cast<size_t>((o * len + i) * inner) * es, slice);
          dst += slice;
        }
      }
    }
  } else {
    for (int64_t o = 0; o < outer; ++o) {
      for (const Tensor& v : values) {
        const size_t block = static_cast<size_t>(v.dim(axis) * inner) * es;
        std::memcpy(dst, v.raw() + static_cast<size_t>(o) * block, block);
        dst += block;
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_cumsum(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", 0));
  SG_ASSIGN_OR_RETURN(bool exclusive, ctx.get_bool_or("exclusive", false));
  SG_ASSIGN_OR_RETURN(bool reverse, ctx.get_bool_or("reverse", false));
  SG_OP_CHECK(ctx, x.dtype() != DType::kString, ErrorCode::kShape, "x must be numeric");
  SG_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_in, x.rank(), "axis"));
  SG_ASSIGN_OR_RETURN(std::vector<double> v, to_double_vector(x));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t len = x.dim(axis);
  std::vector<double> r(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t s = 0; s < len; ++s) {
        const int64_t k = reverse ? len - 1 - s : s;
        const size_t at = static_cast<size_t>((o * len + k) * inner + i);
        if (exclusive) {
          r[at] = acc;
          acc += v[at];
        } else {
          acc += v[at];
          r[at] = acc;
        }
      }
    }
  }
  if (kern::is_intlike(x)) {
    std::vector<int64_t> iv(r.size());
    for (size_t i = 0; i < r.size(); ++i) iv[i] = kern::saturate_i64(r[i]);
    return set(ctx, kern::int32_tensor(ctx, x.shape(), iv));
  }
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, DType::kF32, x.shape()));
  for (size_t i = 0; i < r.size(); ++i) out.mutable_data<float>()[i] = static_cast<float>(r[i]);
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_expand_dims(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> axes, int_list(ctx, "axes"));
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> norm,
                      kern::normalize_axes(ctx, axes, out_rank, "axes"));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : norm) inserted[static_cast<size_t>(a)] = true;
  Shape out;
  size_t k = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    out.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.shape()[k++]);
  }
  return set(ctx, x.reshaped(out));
}

namespace {
Status fill_with(OpContext& ctx, const Shape& shape) {
  Tensor value = Tensor::scalar_f32(0.0f);
  if (ctx.has("value")) {
    SG_ASSIGN_OR_RETURN(value, ctx.get("value"));
    SG_OP_CHECK(ctx, value.numel() == 1 && value.dtype() != DType::kString, ErrorCode::kShape,
                "value must be a numeric scalar, got {}", shape_str(value.shape()));
  }
  const DType dtype = kern::is_float(value) ? DType::kF32
                      : value.dtype() == DType::kBool ? DType::kBool : DType::kI32;
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, dtype, shape));
  SG_ASSIGN_OR_RETURN(std::vector<std::byte> bytes,
                      element_bytes(ctx, dtype, element_as_double(value, 0)));
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::memcpy(out.mutable_raw() + static_cast<size_t>(i) * bytes.size(), bytes.data(), bytes.size());
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}
}  // namespace

Status op_fill(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_list(ctx, "shape"));
  for (int64_t d : shape) {
    SG_OP_CHECK(ctx, d >= 0, ErrorCode::kShape, "fill: shape {} has a negative dim",
                ints_str(shape));
  }
  auto n = checked_numel(shape);
  if (!n.is_ok()) return ctx.error(ErrorCode::kShape, n.status().message());
  return fill_with(ctx, shape);
}

Status op_fill_like(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ref, ctx.get("ref_tensor"));
  return fill_with(ctx, ref.shape());
}

Status op_flatten2d(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(int64_t axis, ctx.get_int_or("axis", 1));
  SG_OP_CHECK(ctx, axis >= -x.rank() && axis <= x.rank(), ErrorCode::kShape,
              "axis = {} is out of range for rank {}", axis, x.rank());
  if (axis < 0) axis += x.rank();
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? a : b) *= x.dim(d);
  return set(ctx, x.reshaped({a, b}));
}

Status op_identity(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  ctx.set_output(0, std::move(x));
  return Status::ok();
}

Status op_pad(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> pad, int_list(ctx, "pad"));
  SG_ASSIGN_OR_RETURN(std::string mode, ctx.get_string_or("mode", "constant"));
  SG_ASSIGN_OR_RETURN(double constant, ctx.get_float_or("constant_val", 0.0));
  SG_OP_CHECK(ctx, mode == "constant" || mode == "reflect" || mode == "replicate",
              ErrorCode::kShape, "pad: mode '{}' is not constant, reflect or replicate", mode);
  SG_OP_CHECK(ctx, pad.size() % 2 == 0 && static_cast<int64_t>(pad.size() / 2) <= x.rank(),
              ErrorCode::kShape, "pad {} must hold 2 entries per padded dim (rank {})",
              ints_str(pad), x.rank());
  const int64_t first = x.rank() - static_cast<int64_t>(pad.size() / 2);
  const std::vector<int64_t> st = strides_of(x.shape());
  Shape out_shape = x.shape();
  for (int64_t d = first; d < x.rank(); ++d) {
    const int64_t before = pad[static_cast<size_t>(2 * (d - first))];
    const int64_t after = pad[static_cast<size_t>(2 * (d - first) + 1)];
    SG_OP_CHECK(ctx, before >= 0 && after >= 0 && before <= (int64_t{1} << 32) &&
                         after <= (int64_t{1} << 32),
                ErrorCode::kShape, "pad {} holds a negative or huge amount", ints_str(pad));
    out_shape[static_cast<size_t>(d)] = x.dim(d) + before + after;
  }
  auto total = checked_numel(out_shape);
  if (!total.is_ok()) return ctx.error(ErrorCode::kShape, "pad: " + total.status().message());
  SG_ASSIGN_OR_RETURN(bool done, set_if_empty_or_check_budget(ctx, x, out_shape, *total));
  if (done) return Status::ok();
  std::vector<std::vector<int64_t>> offsets;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const int64_t n = x.dim(d);
    if (d < first) {
      offsets.push_back(straight(n, st[d]));
      continue;
    }
    const int64_t before = pad[static_cast<size_t>(2 * (d - first))];
    const int64_t after = pad[static_cast<size_t>(2 * (d - first) + 1)];
    if (mode == "reflect") {
      SG_OP_CHECK(ctx, before < n && after < n, ErrorCode::kShape,
                  "reflect pad {} needs amounts smaller than dim {} of size {}", ints_str(pad), d,
                  n);
    }
    if (mode == "replicate") {
      SG_OP_CHECK(ctx, n > 0 || before + after == 0, ErrorCode::kShape,
                  "replicate pad of the empty dim {}", d);
    }
    const int64_t m = out_shape[static_cast<size_t>(d)];
    std::vector<int64_t> off(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
      int64_t j = i - before;
      if (j < 0 || j >= n) {
        if (mode == "constant") {
          off[static_cast<size_t>(i)] = -1;
          continue;
        }
        if (mode == "reflect") j = j < 0 ? -j : 2 * (n - 1) - j;
        else j = j < 0 ? 0 : n - 1;
      }
      off[static_cast<size_t>(i)] = j * st[d];
    }
    offsets.push_back(std::move(off));
  }
  std::vector<std::byte> fill;
  if (x.dtype() != DType::kString) {
    SG_ASSIGN_OR_RETURN(fill, element_bytes(ctx, x.dtype(), constant));
  }
  return set(ctx, kern::remap(ctx, x, out_shape, offsets, fill));
}

Status op_range_1d(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor start_t, ctx.get("start"));
  SG_ASSIGN_OR_RETURN(Tensor end_t, ctx.get("end"));
  SG_ASSIGN_OR_RETURN(Tensor step_t, ctx.get("step"));
  SG_ASSIGN_OR_RETURN(double start, ctx.get_float("start"));
  SG_ASSIGN_OR_RETURN(double end, ctx.get_float("end"));
  SG_ASSIGN_OR_RETURN(double step, ctx.get_float("step"));
  SG_OP_CHECK(ctx, step != 0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(end),
              ErrorCode::kShape, "range_1d: start {}, end {}, step {} do not define a range", start,
              end, step);
  const double count_d = std::ceil((end - start) / step);
  SG_OP_CHECK(ctx, count_d <= static_cast<double>(kMaxTensorBytes), ErrorCode::kShape,
              "range_1d: {} elements is too many", count_d);
  const int64_t count = count_d > 0 ? static_cast<int64_t>(count_d) : 0;
  const bool all_int = kern::is_intlike(start_t) && kern::is_intlike(end_t) && kern::is_intlike(step_t);
  if (all_int) {
    SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, DType::kI32, {count}));
    for (int64_t i = 0; i < count; ++i) {
      out.mutable_data<int32_t>()[i] =
          static_cast<int32_t>(static_cast<int64_t>(start) + i * static_cast<int64_t>(step));
    }
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, DType::kF32, {count}));
  for (int64_t i = 0; i < count; ++i) {
    out.mutable_data<float>()[i] = static_cast<float>(start + static_cast<double>(i) * step);
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_reshape(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_list(ctx, "shape"));
  const int64_t k = static_cast<int64_t>(shape.size());
  const bool ios17 = kern::opset_version(ctx) >= 17;
  int infer_at = -1;
  for (int64_t i = 0; i < k; ++i) {
    int64_t& d = shape[static_cast<size_t>(i)];
    if (d == 0) {
      if (ios17) {
        // Zeros copy input dims matched from the right; those without a partner become 1.
        const int64_t j = x.rank() - (k - i);
        d = j >= 0 ? x.dim(j) : 1;
      } else {
        SG_OP_CHECK(ctx, k == x.rank(), ErrorCode::kShape,
                    "reshape: shape {} holds 0 but its length differs from the rank of x {} "
                    "(allowed from iOS17 on)",
                    ints_str(shape), shape_str(x.shape()));
        d = x.dim(i);
      }
    } else if (d == -1) {
      SG_OP_CHECK(ctx, infer_at < 0, ErrorCode::kShape, "reshape: shape {} holds -1 twice",
                  ints_str(shape));
      infer_at = static_cast<int>(i);
    } else {
      SG_OP_CHECK(ctx, d > 0, ErrorCode::kShape, "reshape: shape {} holds {}", ints_str(shape), d);
    }
  }
  if (infer_at >= 0) {
    int64_t known = 1;
    for (int64_t i = 0; i < k; ++i) {
      if (i == infer_at) continue;
      SG_OP_CHECK(ctx, !__builtin_mul_overflow(known, shape[static_cast<size_t>(i)], &known),
                  ErrorCode::kShape, "reshape: shape {} overflows", ints_str(shape));
    }
    SG_OP_CHECK(ctx, known > 0 && x.numel() % known == 0, ErrorCode::kShape,
                "reshape: cannot infer -1 in {} for x of shape {} ({} elements)", ints_str(shape),
                shape_str(x.shape()), x.numel());
    shape[static_cast<size_t>(infer_at)] = x.numel() / known;
  }
  auto r = x.reshaped(shape);
  if (!r.is_ok()) return ctx.error(ErrorCode::kShape, "reshape: " + r.status().message());
  ctx.set_output(0, std::move(r).value());
  return Status::ok();
}

Status op_reverse(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  std::vector<bool> rev(static_cast<size_t>(x.rank()), true);
  if (ctx.has("axes")) {
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> axes, int_list(ctx, "axes"));
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> norm, kern::normalize_axes(ctx, axes, x.rank(), "axes"));
    std::fill(rev.begin(), rev.end(), false);
    for (int64_t a : norm) rev[static_cast<size_t>(a)] = true;
  }
  const std::vector<int64_t> st = strides_of(x.shape());
  std::vector<std::vector<int64_t>> offsets;
  for (int64_t d = 0; d < x.rank(); ++d) {
    std::vector<int64_t> off = straight(x.dim(d), st[d]);
    if (rev[static_cast<size_t>(d)]) std::reverse(off.begin(), off.end());
    offsets.push_back(std::move(off));
  }
  return set(ctx, kern::remap(ctx, x, x.shape(), offsets));
}

Status op_shape(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  return set(ctx, kern::int32_tensor(ctx, {x.rank()}, x.shape()));
}

Status op_slice_by_index(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<kern::DimSlice> dims, kern::resolve_slice_by_index(ctx, x.shape()));
  const std::vector<int64_t> st = strides_of(x.shape());
  Shape out_shape, kept_shape;
  std::vector<std::vector<int64_t>> offsets;
  for (size_t d = 0; d < dims.size(); ++d) {
    const kern::DimSlice& s = dims[d];
    if (!s.squeeze) kept_shape.push_back(s.count);
    out_shape.push_back(s.count);
    std::vector<int64_t> off(static_cast<size_t>(s.count));
    for (int64_t i = 0; i < s.count; ++i) off[static_cast<size_t>(i)] = (s.start + i * s.step) * st[d];
    offsets.push_back(std::move(off));
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::remap(ctx, x, out_shape, offsets));
  return set(ctx, out.reshaped(kept_shape));
}

Status op_slice_by_size(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> begin, int_list(ctx, "begin"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> size, int_list(ctx, "size"));
  const size_t r = static_cast<size_t>(x.rank());
  SG_OP_CHECK(ctx, begin.size() == r && size.size() == r, ErrorCode::kShape,
              "begin {} and size {} must have rank(x) = {} entries", ints_str(begin),
              ints_str(size), r);
  const std::vector<int64_t> st = strides_of(x.shape());
  Shape out_shape;
  std::vector<std::vector<int64_t>> offsets;
  for (size_t d = 0; d < r; ++d) {
    const int64_t len = x.dim(static_cast<int64_t>(d));
    const int64_t b0 = clamp_index(begin[d]);
    const int64_t b = b0 < 0 ? b0 + len : b0;
    SG_OP_CHECK(ctx, b >= 0 && b <= len, ErrorCode::kShape,
                "begin {} is outside dim {} of size {}", begin[d], d, len);
    const int64_t n = size[d] == -1 ? len - b : size[d];
    SG_OP_CHECK(ctx, n >= 0 && n <= len - b, ErrorCode::kShape,
                "size {} from begin {} exceeds dim {} of size {}", size[d], begin[d], d, len);
    out_shape.push_back(n);
    std::vector<int64_t> off(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) off[static_cast<size_t>(i)] = (b + i) * st[d];
    offsets.push_back(std::move(off));
  }
  return set(ctx, kern::remap(ctx, x, out_shape, offsets));
}

Status op_split(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int("axis"));
  SG_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_in, x.rank(), "axis"));
  const int64_t len = x.dim(axis);
  std::vector<int64_t> sizes;
  if (ctx.has("split_sizes")) {
    SG_ASSIGN_OR_RETURN(sizes, int_list(ctx, "split_sizes"));
    int64_t sum = 0;
    for (int64_t s : sizes) {
      SG_OP_CHECK(ctx, s >= 0 && s <= len, ErrorCode::kShape, "split_sizes {} holds {}",
                  ints_str(sizes), s);
      sum += s;
    }
    SG_OP_CHECK(ctx, sum == len, ErrorCode::kShape,
                "split_sizes {} sum to {}, dim {} of x {} has {}", ints_str(sizes), sum, axis,
                shape_str(x.shape()), len);
  } else {
    SG_OP_CHECK(ctx, ctx.has("num_splits"), ErrorCode::kShape,
                "split needs num_splits or split_sizes");
    SG_ASSIGN_OR_RETURN(int64_t n, ctx.get_int("num_splits"));
    SG_OP_CHECK(ctx, n > 0 && len % n == 0, ErrorCode::kShape,
                "num_splits {} does not divide dim {} of x {}", n, axis, shape_str(x.shape()));
    sizes.assign(static_cast<size_t>(n), len / n);
  }
  SG_OP_CHECK(ctx, sizes.size() == ctx.num_outputs(), ErrorCode::kShape,
              "split into {} parts but the op declares {} outputs", sizes.size(), ctx.num_outputs());
  const std::vector<int64_t> st = strides_of(x.shape());
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape out_shape = x.shape();
    out_shape[static_cast<size_t>(axis)] = sizes[k];
    std::vector<std::vector<int64_t>> offsets;
    for (int64_t d = 0; d < x.rank(); ++d) {
      std::vector<int64_t> off = straight(out_shape[static_cast<size_t>(d)], st[d]);
      if (d == axis) {
        for (int64_t& o : off) o += at * st[d];
      }
      offsets.push_back(std::move(off));
    }
    SG_ASSIGN_OR_RETURN(Tensor part, kern::remap(ctx, x, out_shape, offsets));
    ctx.set_output(k, std::move(part));
    at += sizes[k];
  }
  return Status::ok();
}

Status op_squeeze(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
  if (ctx.has("axes")) {
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> axes, int_list(ctx, "axes"));
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> norm, kern::normalize_axes(ctx, axes, x.rank(), "axes"));
    // PyTorch behaviour: listed dims that are not 1 are kept.
    for (int64_t a : norm) drop[static_cast<size_t>(a)] = x.dim(a) == 1;
  } else {
    for (int64_t d = 0; d < x.rank(); ++d) drop[static_cast<size_t>(d)] = x.dim(d) == 1;
  }
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!drop[static_cast<size_t>(d)]) out.push_back(x.dim(d));
  }
  return set(ctx, x.reshaped(out));
}

Status op_stack(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::vector<Tensor> values, ctx.get_all("values"));
  SG_OP_CHECK(ctx, !values.empty(), ErrorCode::kShape, "stack needs at least one value");
  SG_ASSIGN_OR_RETURN(values, kern::unify_dtypes(ctx, std::move(values)));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int("axis"));
  const Tensor& first = values.front();
  SG_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_in, first.rank() + 1, "axis"));
  for (size_t k = 0; k < values.size(); ++k) {
    SG_OP_CHECK(ctx, values[k].shape() == first.shape(), ErrorCode::kShape,
                "values[{}] has shape {}, values[0] {}", k, shape_str(values[k].shape()),
                shape_str(first.shape()));
  }
  const size_t es = kern::element_size(first.dtype());
  SG_OP_CHECK(ctx, es > 0, ErrorCode::kUnsupported, "stack: cannot move dtype {}",
              dtype_name(first.dtype()));
  Shape out_shape = first.shape();
  out_shape.insert(out_shape.begin() + axis, static_cast<int64_t>(values.size()));
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, first.dtype(), out_shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (int64_t d = axis; d < first.rank(); ++d) inner *= first.dim(d);
  const size_t block = static_cast<size_t>(inner) * es;
  std::byte* dst = out.mutable_raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& v : values) {
      std::memcpy(dst, v.raw() + static_cast<size_t>(o) * block, block);
      dst += block;
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_tile(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> reps, int_list(ctx, "reps"));
  SG_OP_CHECK(ctx, static_cast<int64_t>(reps.size()) == x.rank(), ErrorCode::kShape,
              "reps {} must have rank(x) = {} entries", ints_str(reps), x.rank());
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const int64_t rp = reps[static_cast<size_t>(d)];
    int64_t m = 0;
    SG_OP_CHECK(ctx, rp >= 0 && !__builtin_mul_overflow(x.dim(d), rp, &m), ErrorCode::kShape,
                "reps {} holds {}", ints_str(reps), rp);
    out_shape.push_back(m);
  }
  auto n = checked_numel(out_shape);
  if (!n.is_ok()) return ctx.error(ErrorCode::kShape, n.status().message());
  SG_ASSIGN_OR_RETURN(bool done, set_if_empty_or_check_budget(ctx, x, out_shape, *n));
  if (done) return Status::ok();
  const std::vector<int64_t> st = strides_of(x.shape());
  std::vector<std::vector<int64_t>> offsets;
  for (int64_t d = 0; d < x.rank(); ++d) {
    std::vector<int64_t> off(static_cast<size_t>(out_shape[static_cast<size_t>(d)]));
    for (size_t i = 0; i < off.size(); ++i) off[i] = (static_cast<int64_t>(i) % x.dim(d)) * st[d];
    offsets.push_back(std::move(off));
  }
  return set(ctx, kern::remap(ctx, x, out_shape, offsets));
}

Status op_transpose(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> perm, int_list(ctx, "perm"));
  SG_OP_CHECK(ctx, static_cast<int64_t>(perm.size()) == x.rank(), ErrorCode::kShape,
              "perm {} must have rank(x) = {} entries", ints_str(perm), x.rank());
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> norm, kern::normalize_axes(ctx, perm, x.rank(), "perm"));
  const std::vector<int64_t> st = strides_of(x.shape());
  Shape out_shape;
  std::vector<std::vector<int64_t>> offsets;
  for (int64_t p : norm) {
    out_shape.push_back(x.dim(p));
    offsets.push_back(straight(x.dim(p), st[static_cast<size_t>(p)]));
  }
  return set(ctx, kern::remap(ctx, x, out_shape, offsets));
}

}  // namespace sg
