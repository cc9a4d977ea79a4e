#include "shardgate/declared_ranges.h"

#include <fmt/format.h>

namespace sg {

Status check_declared_ranges(const Function& fn, const std::string& input, const Shape& given) {
  const Value* ranges = flexible_shape_entry(fn, "RangeDims", input);
  if (ranges == nullptr) return Status::ok();
  // A list of [lower, upper] pairs, one per dimension.
  const std::vector<Value>& dims = ranges->elements;
  if (dims.size() != given.size()) {
    return make_error(ErrorCode::kShape,
                      "input '{}' has shape {}, but function '{}' declares RangeDims for {} "
                      "dimensions", input, shape_str(given), fn.name, dims.size());
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!dims[d].tensor.defined()) continue;
    auto bounds = to_int64_vector(dims[d].tensor);
    if (!bounds.is_ok() || bounds->size() != 2) continue;
    const int64_t lo = (*bounds)[0], hi = (*bounds)[1];
    if (given[d] < lo || (hi >= 0 && given[d] > hi)) {
      return make_error(ErrorCode::kShape,
                        "input '{}' has shape {}: dimension {} is {}, outside the range "
                        "[{}, {}] function '{}' declares (FlexibleShapeInformation RangeDims)",
                        input, shape_str(given), d, given[d], lo,
                        hi >= 0 ? std::to_string(hi) : std::string("unbounded"), fn.name);
    }
  }
  return Status::ok();
}

}  // namespace sg
