// Helpers shared by the kernel families: axis normalisation, strides, output allocation and
// dtype questions. Every helper reports errors through the op's context so messages name the
// op and the parameter.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace sg::kern {

// Maps axis in [-rank, rank) to [0, rank); anything else is a kShape error naming `param`.
Result<int64_t> normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank,
                               std::string_view param);
// Normalises each axis; duplicates are a kShape error. Order is kept.
Result<std::vector<int64_t>> normalize_axes(const OpContext& ctx, const std::vector<int64_t>& axes,
                                            int64_t rank, std::string_view param);

// Row-major strides (in elements).
std::vector<int64_t> strides_of(const Shape& shape);

// A kernel's result tensor; the kernel writes every element. Left uninitialised (no pass over
// a large output before the kernel's own), except under the op harness
// (OpContext::poison_new_tensors), where it starts as all bits set so that an element left
// unwritten is caught. Allocation failures become op-located errors.
Result<Tensor> new_tensor(const OpContext& ctx, DType dtype, const Shape& shape);
// A tensor whose zeros the kernel relies on (padding, scatter targets, accumulators).
Result<Tensor> zeros_tensor(const OpContext& ctx, DType dtype, const Shape& shape);

// True for fp16/fp32/fp64/bf16 tensors.
inline bool is_float(const Tensor& t) { return dtype_is_float(t.dtype()); }
// True for integer (any width) and bool tensors.
inline bool is_intlike(const Tensor& t) {
  return dtype_is_integer(t.dtype()) || t.dtype() == DType::kBool;
}
// Bytes per element of a byte-addressable dtype; 0 for strings and sub-byte types.
size_t element_size(DType dtype);

// Reads a numeric tensor as int64 values (for int-typed elementwise math).
std::vector<int64_t> as_int64(const Tensor& t);
// Truncates toward zero into int64; NaN becomes 0 and values beyond the int64 range saturate
// (a plain cast would be undefined there).
int64_t saturate_i64(double v);
// Builds an int32 tensor from int64 values (wrapping like int32 arithmetic).
Result<Tensor> int32_tensor(const OpContext& ctx, const Shape& shape,
                            const std::vector<int64_t>& values);

// Copies elements with strides: out[i] = in[index_of(i)] for byte-addressable dtypes.
// `src_index` has one entry per output element. String tensors are handled too.
Result<Tensor> gather_elements(const OpContext& ctx, const Tensor& in, const Shape& out_shape,
                               const std::vector<int64_t>& src_index);

// Moves elements along independent per-dimension maps: output element at coordinates c reads
// input flat offset sum_d offsets[d][c[d]] (offsets already multiplied by the input strides);
// an entry of -1 in any dim makes that output element `fill` (the bytes of one element of
// in.dtype(); zeros when empty). Covers transpose, slicing, tiling, reversing and padding.
// offsets.size() == out_shape.size() and offsets[d].size() == out_shape[d].
Result<Tensor> remap(const OpContext& ctx, const Tensor& in, const Shape& out_shape,
                     const std::vector<std::vector<int64_t>>& offsets,
                     const std::vector<std::byte>& fill = {});

// Converts tensors to fp32 when their dtypes differ (e.g. an fp16 weight next to an fp32
// activation in the reference mode); same-dtype lists are returned unchanged.
Result<std::vector<Tensor>> unify_dtypes(const OpContext& ctx, std::vector<Tensor> ts);

// The opset number of the op's function ("ios17" -> 17); 18 when it is not written.
int opset_version(const OpContext& ctx);

// "[1, 2, 3]"
std::string ints_str(const std::vector<int64_t>& v);

}  // namespace sg::kern
