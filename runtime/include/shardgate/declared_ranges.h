// The size ranges a compiled program declares for its flexible inputs, checked against what a
// run is given.
#pragma once

#include "shardgate/program.h"
#include "shardgate/status.h"

namespace sg {

// An input shape outside the RangeDims its function's FlexibleShapeInformation attribute
// declares (what Apple's compiler writes into model.mil: `("RangeDims", {{"x", [[1, 4],
// [1, 64], [8, 8]]}})`, an upper bound of -1 meaning unbounded) is a shape error naming the
// input, the dimension and the range: the type alone (`[?, ?, 8]`) accepts any size, and a
// device refuses such an input. Inputs without declared ranges pass.
// flexible_shape_entry (shardgate/program.h) reads the attribute.
Status check_declared_ranges(const Function& fn, const std::string& input, const Shape& given);

}  // namespace sg
