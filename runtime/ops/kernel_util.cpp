#include "ops/kernel_util.h"

#include "ops/broadcast.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sg::kern {

Result<int64_t> normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank,
                               std::string_view param) {
  if (axis < -rank || axis >= rank || (rank == 0)) {
    return ctx.error(ErrorCode::kShape, fmt::format("{} = {} is out of range for rank {}", param,
                                                    axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Result<std::vector<int64_t>> normalize_axes(const OpContext& ctx, const std::vector<int64_t>& axes,
                                            int64_t rank, std::string_view param) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return ctx.error(ErrorCode::kShape, fmt::format("{} {} holds axis {}, out of range for rank {}",
                                                      param, ints_str(axes), a, rank));
    }
    const int64_t n = a < 0 ? a + rank : a;
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return ctx.error(ErrorCode::kShape,
                       fmt::format("{} {} names axis {} twice", param, ints_str(axes), n));
    }
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

Result<Tensor> zeros_tensor(const OpContext& ctx, DType dtype, const Shape& shape) {
  auto t = Tensor::zeros(dtype, shape);
  if (!t.is_ok()) return ctx.error(t.status().code(), t.status().message());
  return t;
}

Result<Tensor> new_tensor(const OpContext& ctx, DType dtype, const Shape& shape) {
  // Not zero-filled: the kernel writes every element, and filling a 25 MB activation first
  // was ~4% of a 512-token MoE layer (bench/README.md, Many tokens).
  auto r = Tensor::uninitialized(dtype, shape);
  if (!r.is_ok()) return ctx.error(r.status().code(), r.status().message());
  Tensor t = std::move(r).value();
  if (ctx.poison_new_tensors() && t.nbytes() > 0) std::memset(t.mutable_raw(), 0xFF, t.nbytes());
  return t;
}

size_t element_size(DType dtype) {
  const int bits = dtype_bits(dtype);
  if (bits < 8 || dtype == DType::kString) return 0;
  return static_cast<size_t>(bits / 8);
}

std::vector<int64_t> as_int64(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::kI32:
      for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.data<int32_t>()[i];
      break;
    case DType::kI64:
      for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.data<int64_t>()[i];
      break;
    default:
      for (int64_t i = 0; i < t.numel(); ++i) {
        v[static_cast<size_t>(i)] = saturate_i64(element_as_double(t, i));
      }
  }
  return v;
}

int64_t saturate_i64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

Result<Tensor> int32_tensor(const OpContext& ctx, const Shape& shape,
                            const std::vector<int64_t>& values) {
  SG_ASSIGN_OR_RETURN(Tensor t, new_tensor(ctx, DType::kI32, shape));
  int32_t* d = t.mutable_data<int32_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    d[i] = static_cast<int32_t>(static_cast<uint32_t>(values[i]));  // two's complement wrap
  }
  return t;
}

Result<Tensor> gather_elements(const OpContext& ctx, const Tensor& in, const Shape& out_shape,
                               const std::vector<int64_t>& src_index) {
  if (in.dtype() == DType::kString) {
    std::vector<std::string> s;
    s.reserve(src_index.size());
    for (int64_t i : src_index) s.push_back(in.strings()[static_cast<size_t>(i)]);
    return Tensor::from_strings(out_shape, std::move(s));
  }
  const size_t es = element_size(in.dtype());
  if (es == 0) {
    return ctx.error(ErrorCode::kUnsupported,
                     fmt::format("cannot move elements of dtype {}", dtype_name(in.dtype())));
  }
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, in.dtype(), out_shape));
  std::byte* dst = out.mutable_raw();
  const std::byte* src = in.raw();
  for (size_t i = 0; i < src_index.size(); ++i) {
    std::memcpy(dst + i * es, src + static_cast<size_t>(src_index[i]) * es, es);
  }
  return out;
}

namespace {
template <typename T>
void remap_typed(const std::byte* src_raw, std::byte* dst_raw, const Shape& out,
                 const std::vector<std::vector<int64_t>>& offsets, const std::byte* fill) {
  const T* src = reinterpret_cast<const T*>(src_raw);
  T* dst = reinterpret_cast<T*>(dst_raw);
  T fill_value{};
  if (fill) std::memcpy(&fill_value, fill, sizeof(T));
  const size_t rank = out.size();
  const int64_t total = numel(out);
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = out[rank - 1];
  const std::vector<int64_t>& last = offsets[rank - 1];
  std::vector<int64_t> coord(rank, 0);
  for (int64_t o = 0; o < total; o += inner) {
    int64_t base = 0;
    bool padded = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const int64_t off = offsets[d][static_cast<size_t>(coord[d])];
      if (off < 0) padded = true;
      base += off;
    }
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t off = last[static_cast<size_t>(j)];
      dst[o + j] = (padded || off < 0) ? fill_value : src[base + off];
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
}
}  // namespace

Result<Tensor> remap(const OpContext& ctx, const Tensor& in, const Shape& out_shape,
                     const std::vector<std::vector<int64_t>>& offsets,
                     const std::vector<std::byte>& fill) {
  const size_t es = element_size(in.dtype());
  if (es == 0 && in.dtype() != DType::kString) {
    return ctx.error(ErrorCode::kUnsupported,
                     fmt::format("cannot move elements of dtype {}", dtype_name(in.dtype())));
  }
  if (in.dtype() == DType::kString) {
    // Rare (string tensors are parameters); build the flat index list and reuse the gather.
    std::vector<int64_t> idx;
    const int64_t total = numel(out_shape);
    std::vector<int64_t> coord(out_shape.size(), 0);
    for (int64_t o = 0; o < total; ++o) {
      int64_t src = 0;
      for (size_t d = 0; d < out_shape.size(); ++d) {
        const int64_t off = offsets[d][static_cast<size_t>(coord[d])];
        if (off < 0) return ctx.error(ErrorCode::kUnsupported, "cannot pad a string tensor");
        src += off;
      }
      idx.push_back(src);
      for (size_t d = out_shape.size(); d-- > 0;) {
        if (++coord[d] < out_shape[d]) break;
        coord[d] = 0;
      }
    }
    return gather_elements(ctx, in, out_shape, idx);
  }
  SG_ASSIGN_OR_RETURN(Tensor out, new_tensor(ctx, in.dtype(), out_shape));
  const std::byte* f = fill.size() == es ? fill.data() : nullptr;
  switch (es) {
    case 1: remap_typed<uint8_t>(in.raw(), out.mutable_raw(), out_shape, offsets, f); break;
    case 2: remap_typed<uint16_t>(in.raw(), out.mutable_raw(), out_shape, offsets, f); break;
    case 4: remap_typed<uint32_t>(in.raw(), out.mutable_raw(), out_shape, offsets, f); break;
    case 8: remap_typed<uint64_t>(in.raw(), out.mutable_raw(), out_shape, offsets, f); break;
    default:
      return ctx.error(ErrorCode::kUnsupported,
                       fmt::format("cannot move elements of dtype {}", dtype_name(in.dtype())));
  }
  return out;
}

Result<std::vector<Tensor>> unify_dtypes(const OpContext& ctx, std::vector<Tensor> ts) {
  bool same = true;
  for (const Tensor& t : ts) same = same && t.dtype() == ts.front().dtype();
  if (same) return ts;
  for (Tensor& t : ts) {
    auto f = to_f32(t);
    if (!f.is_ok()) {
      return ctx.error(ErrorCode::kShape,
                       fmt::format("operands of different dtypes cannot be combined: {}",
                                   f.status().message()));
    }
    t = std::move(f).value();
  }
  return ts;
}

int opset_version(const OpContext& ctx) {
  const std::string& s = ctx.function().opset;
  if (s.size() > 3 && s.rfind("ios", 0) == 0) {
    int v = 0;
    for (size_t i = 3; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return 18;
      v = v * 10 + (s[i] - '0');
      if (v > 1000) return 18;
    }
    return v;
  }
  return 18;
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Result<Shape> broadcast_shapes(const OpContext& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string list;
      for (const Shape& t : shapes) list += (list.empty() ? "" : " and ") + shape_str(t);
      return ctx.error(ErrorCode::kShape, fmt::format("shapes {} do not broadcast", list));
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const std::vector<int64_t> own = strides_of(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

}  // namespace sg::kern
