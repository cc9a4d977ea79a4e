// List ops (coremltools 9.0 iOS15/control_flow.py): make_list, list_length, list_write,
// list_read, list_gather, list_scatter. The list value type is kept minimal: a list is one
// tensor that stacks its elements along a new leading axis, [length, *element shape], in the
// element dtype; slots never written hold zeros. An element dim that make_list declares
// symbolically (a string in elem_shape) is 0 until the first write fixes it (the list is then
// re-made with that shape). A list whose declared type has a length (list<T, 4>) is fixed and
// rejects indices beyond it; a dynamic one (list<T, ?>, or any list seen by the op harness)
// grows to index + 1 on writes past its end. The executor stores list-typed outputs in their
// element dtype (runtime/exec/executor.cpp).
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cstring>

namespace sg {
namespace {

// True when the op's output 0 is a list of declared (fixed) length.
bool fixed_length(const OpContext& ctx, int64_t& length) {
  const ValueType& t = ctx.output_type(0);
  if (t.kind != ValueType::Kind::kList || t.list_length == kUnknownDim) return false;
  length = t.list_length;
  return true;
}

Result<Tensor> read_list(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ls, ctx.get("ls"));
  SG_OP_CHECK(ctx, ls.rank() >= 1, ErrorCode::kShape, "ls is a scalar, not a list (stacked [length, ...])");
  SG_OP_CHECK(ctx, kern::element_size(ls.dtype()) > 0, ErrorCode::kUnsupported, "lists of {} are not supported",
              dtype_name(ls.dtype()));
  return ls;
}

Shape element_shape(const Tensor& ls) { return Shape(ls.shape().begin() + 1, ls.shape().end()); }

// Makes room for writing elements shaped like `value_shape` at indices up to `max_index`:
// resolves still-unknown (0) element dims, grows a dynamic list, checks a fixed one.
Result<Tensor> prepare_write(OpContext& ctx, const Tensor& ls, const Shape& value_shape, int64_t max_index) {
  Shape elem = element_shape(ls);
  SG_OP_CHECK(ctx, elem.size() == value_shape.size(), ErrorCode::kShape,
              "value has shape {}, the list holds elements of rank {} ({})", shape_str(value_shape), elem.size(),
              shape_str(elem));
  bool reshape = false;
  for (size_t d = 0; d < elem.size(); ++d) {
    if (elem[d] == 0 && value_shape[d] != 0 && ls.numel() == 0) {
      elem[d] = value_shape[d];
      reshape = true;
    }
    SG_OP_CHECK(ctx, elem[d] == value_shape[d], ErrorCode::kShape,
                "value has shape {}, the list holds elements shaped {}", shape_str(value_shape), shape_str(elem));
  }
  int64_t length = ls.dim(0), fixed = 0;
  if (fixed_length(ctx, fixed)) {
    SG_OP_CHECK(ctx, max_index < fixed, ErrorCode::kShape, "index {} is out of range for a list of fixed length {}",
                max_index, fixed);
  }
  if (max_index >= length) {
    SG_OP_CHECK(ctx, max_index < (int64_t{1} << 24), ErrorCode::kShape, "index {} is too large", max_index);
    length = max_index + 1;
    reshape = true;
  }
  if (!reshape) {  // copy (values are immutable once stored)
    SG_ASSIGN_OR_RETURN(Tensor copy, kern::new_tensor(ctx, ls.dtype(), ls.shape()));
    if (ls.nbytes() > 0) std::memcpy(copy.mutable_raw(), ls.raw(), ls.nbytes());
    return copy;
  }
  Shape grown{length};
  grown.insert(grown.end(), elem.begin(), elem.end());
  SG_ASSIGN_OR_RETURN(Tensor out, kern::zeros_tensor(ctx, ls.dtype(), grown));  // new slots are zeros
  if (ls.numel() > 0) std::memcpy(out.mutable_raw(), ls.raw(), ls.nbytes());  // same element shape
  return out;
}

Result<Tensor> value_as(OpContext& ctx, const char* name, DType dtype) {
  SG_ASSIGN_OR_RETURN(Tensor v, ctx.get(name));
  if (v.dtype() == dtype) return v;
  SG_OP_CHECK(ctx, dtype_is_float(dtype) == dtype_is_float(v.dtype()), ErrorCode::kShape,
              "{} is {}, the list holds {}", name, dtype_name(v.dtype()), dtype_name(dtype));
  return cast_tensor(v, dtype);
}

Result<int64_t> checked_index(OpContext& ctx, int64_t i, int64_t length, bool allow_past_end) {
  SG_OP_CHECK(ctx, i >= 0 && (allow_past_end || i < length), ErrorCode::kShape,
              "index {} is out of range for a list of length {}", i, length);
  return i;
}

}  // namespace

Status op_make_list(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(int64_t length, ctx.get_int_or("init_length", 1));
  SG_ASSIGN_OR_RETURN(std::string dtype_s, ctx.get_string_or("dtype", "fp32"));
  const auto dtype = dtype_from_name(dtype_s);
  SG_OP_CHECK(ctx, dtype && (*dtype == DType::kF16 || *dtype == DType::kF32 || *dtype == DType::kI32 ||
                             *dtype == DType::kBool),
              ErrorCode::kShape, "dtype '{}' is not one of bool, fp16, fp32, int32", dtype_s);
  SG_OP_CHECK(ctx, length >= 0 && length <= (int64_t{1} << 24), ErrorCode::kShape, "init_length {} out of range",
              length);
  Shape shape{length};
  if (ctx.has("elem_shape")) {
    SG_ASSIGN_OR_RETURN(std::vector<Tensor> dims, ctx.get_all("elem_shape"));
    // A single int vector is accepted as well as a tuple of scalars.
    if (dims.size() == 1 && dims[0].rank() == 1 && dtype_is_integer(dims[0].dtype())) {
      SG_ASSIGN_OR_RETURN(std::vector<int64_t> v, to_int64_vector(dims[0]));
      shape.insert(shape.end(), v.begin(), v.end());
    } else {
      for (const Tensor& d : dims) {
        SG_OP_CHECK(ctx, d.numel() == 1, ErrorCode::kShape, "elem_shape entries must be scalars");
        const double v = d.dtype() == DType::kString ? 0.0 : element_as_double(d, 0);
        SG_OP_CHECK(ctx, v >= 0 && v <= 1e9, ErrorCode::kShape, "elem_shape entry {} is not a dim", v);
        shape.push_back(static_cast<int64_t>(v));
      }
    }
  }
  for (int64_t d : shape) SG_OP_CHECK(ctx, d >= 0, ErrorCode::kShape, "elem_shape holds a negative dim");
  SG_ASSIGN_OR_RETURN(Tensor out, kern::zeros_tensor(ctx, *dtype, shape));  // slots never written are zeros
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_list_length(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ls, read_list(ctx));
  ctx.set_output(0, Tensor::scalar_i32(static_cast<int32_t>(ls.dim(0))));
  return Status::ok();
}

Status op_list_write(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ls, read_list(ctx));
  SG_ASSIGN_OR_RETURN(int64_t index, ctx.get_int("index"));
  SG_ASSIGN_OR_RETURN(Tensor value, value_as(ctx, "value", ls.dtype()));
  SG_TRY(checked_index(ctx, index, ls.dim(0), true).status());
  SG_ASSIGN_OR_RETURN(Tensor out, prepare_write(ctx, ls, value.shape(), index));
  const size_t elem_bytes = value.nbytes();
  if (elem_bytes > 0) std::memcpy(out.mutable_raw() + static_cast<size_t>(index) * elem_bytes, value.raw(), elem_bytes);
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_list_scatter(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ls, read_list(ctx));
  SG_ASSIGN_OR_RETURN(Tensor idx_t, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, to_int64_vector(idx_t));
  SG_ASSIGN_OR_RETURN(Tensor value, value_as(ctx, "value", ls.dtype()));
  SG_OP_CHECK(ctx, idx_t.rank() == 1 && value.rank() >= 1 && value.dim(0) == idx_t.dim(0), ErrorCode::kShape,
              "indices {} and value {} must be [n] and [n, *element]", shape_str(idx_t.shape()),
              shape_str(value.shape()));
  int64_t max_index = -1;
  for (int64_t i : idx) {
    SG_TRY(checked_index(ctx, i, ls.dim(0), true).status());
    max_index = std::max(max_index, i);
  }
  const Shape elem(value.shape().begin() + 1, value.shape().end());
  Tensor out = ls;
  if (!idx.empty()) {
    SG_ASSIGN_OR_RETURN(out, prepare_write(ctx, ls, elem, max_index));
  }
  const size_t elem_bytes = idx.empty() ? 0 : value.nbytes() / idx.size();
  for (size_t k = 0; k < idx.size(); ++k) {
    if (elem_bytes > 0) {
      std::memcpy(out.mutable_raw() + static_cast<size_t>(idx[k]) * elem_bytes, value.raw() + k * elem_bytes, elem_bytes);
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_list_read(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ls, read_list(ctx));
  SG_ASSIGN_OR_RETURN(int64_t index, ctx.get_int("index"));
  SG_TRY(checked_index(ctx, index, ls.dim(0), false).status());
  const std::vector<int64_t> st = kern::strides_of(ls.shape());
  std::vector<int64_t> src(static_cast<size_t>(ls.numel() / std::max<int64_t>(1, ls.dim(0))));
  for (size_t i = 0; i < src.size(); ++i) src[i] = index * st[0] + static_cast<int64_t>(i);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::gather_elements(ctx, ls, element_shape(ls), src));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_list_gather(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor ls, read_list(ctx));
  SG_ASSIGN_OR_RETURN(Tensor idx_t, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> idx, to_int64_vector(idx_t));
  SG_OP_CHECK(ctx, idx_t.rank() == 1, ErrorCode::kShape, "indices has shape {}, expected [n]",
              shape_str(idx_t.shape()));
  const int64_t elem = ls.dim(0) == 0 ? 0 : ls.numel() / ls.dim(0);
  Shape out_shape{static_cast<int64_t>(idx.size())};
  const Shape es = element_shape(ls);
  out_shape.insert(out_shape.end(), es.begin(), es.end());
  std::vector<int64_t> src;
  for (int64_t i : idx) {
    SG_TRY(checked_index(ctx, i, ls.dim(0), false).status());
    for (int64_t e = 0; e < elem; ++e) src.push_back(i * elem + e);
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::gather_elements(ctx, ls, out_shape, src));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
