#include "ops/slice_index.h"

#include "ops/kernel_util.h"

#include <algorithm>
#include <limits>

namespace sg::kern {
namespace {

// Python's slice.indices for one dim; begin/end absent when masked.
DimSlice python_slice(int64_t dim, bool has_begin, int64_t begin, bool has_end, int64_t end,
                      int64_t step) {
  const int64_t lower = step > 0 ? 0 : -1;
  const int64_t upper = step > 0 ? dim : dim - 1;
  auto clamp_index = [&](int64_t v) {
    if (v < 0) {
      v += dim;
      return v < lower ? lower : v;
    }
    return v > upper ? upper : v;
  };
  DimSlice s;
  s.step = step;
  s.start = has_begin ? clamp_index(begin) : (step > 0 ? lower : upper);
  const int64_t stop = has_end ? clamp_index(end) : (step > 0 ? upper : lower);
  if (step > 0) {
    s.count = stop > s.start ? (stop - s.start - 1) / step + 1 : 0;
  } else {
    s.count = s.start > stop ? (s.start - stop - 1) / (-step) + 1 : 0;
  }
  return s;
}

}  // namespace

Result<std::vector<DimSlice>> resolve_slice_by_index(OpContext& ctx, const Shape& shape) {
  const size_t rank = shape.size();
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> begin, ctx.get_ints("begin"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> end, ctx.get_ints("end"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> stride, ctx.get_ints_or("stride", std::vector<int64_t>(rank, 1)));
  SG_ASSIGN_OR_RETURN(std::vector<bool> begin_mask, ctx.get_bools_or("begin_mask", std::vector<bool>(rank, false)));
  SG_ASSIGN_OR_RETURN(std::vector<bool> end_mask, ctx.get_bools_or("end_mask", std::vector<bool>(rank, false)));
  SG_ASSIGN_OR_RETURN(std::vector<bool> squeeze_mask, ctx.get_bools_or("squeeze_mask", std::vector<bool>(rank, false)));
  auto check_len = [&](size_t n, const char* name) -> Status {
    if (n != rank) {
      return ctx.error(ErrorCode::kShape, fmt::format("{} has {} entries, x has rank {} ({})", name,
                                                      n, rank, shape_str(shape)));
    }
    return Status::ok();
  };
  SG_TRY(check_len(begin.size(), "begin"));
  SG_TRY(check_len(end.size(), "end"));
  SG_TRY(check_len(stride.size(), "stride"));
  SG_TRY(check_len(begin_mask.size(), "begin_mask"));
  SG_TRY(check_len(end_mask.size(), "end_mask"));
  SG_TRY(check_len(squeeze_mask.size(), "squeeze_mask"));
  std::vector<DimSlice> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = shape[d];
    if (squeeze_mask[d]) {
      // One element at begin (the reference slices begin::INT_MAX).
      DimSlice s = python_slice(dim, !begin_mask[d], begin[d], false, 0, std::numeric_limits<int32_t>::max());
      SG_OP_CHECK(ctx, s.count == 1, ErrorCode::kShape,
                  "squeeze_mask on dim {}: begin {} is out of range for size {}", d, begin[d], dim);
      s.squeeze = true;
      dims[d] = s;
      continue;
    }
    SG_OP_CHECK(ctx, stride[d] != 0, ErrorCode::kShape, "stride {} holds 0 (dim {})",
                ints_str(stride), d);
    SG_OP_CHECK(ctx, stride[d] > std::numeric_limits<int64_t>::min() / 2 &&
                         begin[d] > std::numeric_limits<int64_t>::min() / 2 &&
                         end[d] > std::numeric_limits<int64_t>::min() / 2,
                ErrorCode::kShape, "slice parameters out of range on dim {}", d);
    dims[d] = python_slice(dim, !begin_mask[d], begin[d], !end_mask[d], end[d], stride[d]);
  }
  return dims;
}

std::vector<int64_t> slice_offsets(const Shape& shape, const std::vector<DimSlice>& dims) {
  const std::vector<int64_t> strides = strides_of(shape);
  std::vector<int64_t> offs{0};
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(offs.size() * static_cast<size_t>(dims[d].count));
    for (int64_t o : offs) {
      for (int64_t i = 0; i < dims[d].count; ++i) {
        next.push_back(o + (dims[d].start + i * dims[d].step) * strides[d]);
      }
    }
    offs.swap(next);
  }
  return offs;
}

}  // namespace sg::kern
