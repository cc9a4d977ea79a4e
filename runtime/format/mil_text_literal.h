// Turning the scalar tokens of a model.mil tensor literal into a Tensor of the declared
// element type. Private to the text reader.
#pragma once

#include "format/mil_lexer.h"
#include "shardgate/dtype.h"
#include "shardgate/tensor.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace sg::mil {

// Builds a tensor of `dtype` and `shape` from `elements` (kNumber, kString or the identifiers
// true/false/inf/nan), row-major. `elements.size()` must equal the shape's element count.
// On failure the Status message has no location; `*bad` is set to the index of the offending
// element (or elements.size() when the problem is not one element's).
Result<Tensor> build_tensor_literal(DType dtype, const Shape& shape,
                                    std::span<const Token> elements, size_t* bad);

}  // namespace sg::mil
