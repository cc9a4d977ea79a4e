// slice_by_index addressing (runtime/ops/README.md, Shape and data movement), shared by the kernels
// that take a begin / end / stride / begin_mask / end_mask / squeeze_mask description of a strided
// slice. Each dim follows Python's slice(begin, end, stride).indices(dim): negative values count
// from the end, out-of-range values clamp; begin_mask / end_mask mean "from the start" / "to the
// end"; squeeze_mask takes the single element at begin and drops the dim.
#pragma once

#include "shardgate/op_context.h"

#include <cstdint>
#include <vector>

namespace sg::kern {

struct DimSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
  bool squeeze = false;
};

// Reads begin, end and the optional stride / masks from the op and resolves them against
// `shape`. Errors (kShape) name the parameter: wrong lengths, stride 0, a squeezed dim whose
// begin is out of range.
Result<std::vector<DimSlice>> resolve_slice_by_index(OpContext& ctx, const Shape& shape);

// Flat element offsets of the slice, row-major over the sliced dims.
std::vector<int64_t> slice_offsets(const Shape& shape, const std::vector<DimSlice>& dims);

}  // namespace sg::kern
