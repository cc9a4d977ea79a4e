// Model descriptions (inputs, outputs, states, functions) from the protobuf ModelDescription
// and the helpers shared with the metadata.json reader. Private to runtime/format.
#pragma once

#include "format/protowire.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

// Decodes a CoreML.Specification.ModelDescription message into `info` (inputs, outputs,
// states, per-function features, default function). spec_version is left alone.
Status decode_model_description(protowire::MessageReader reader, ModelInfo& info);

// Core ML ArrayFeatureType.ArrayDataType enum value (FLOAT32 = 0x10020, ...) to a DType.
std::optional<DType> dtype_from_array_data_type(int64_t value);

// Folds a flexible-shape description into a feature's shape: dims that differ between the
// enumerated shapes (or whose range is not a single size) become kUnknownDim. The default
// shape may be empty (coremltools leaves symbolic output shapes empty); then the first
// enumerated shape / the lower bounds give the rank. An error message (without location)
// when the ranks disagree.
Result<Shape> fold_enumerated_shapes(const Shape& default_shape, const std::vector<Shape>& shapes);
// `ranges` are (lower, upper) pairs; upper < 0 means unbounded.
Result<Shape> fold_shape_ranges(const Shape& default_shape,
                                const std::vector<std::pair<int64_t, int64_t>>& ranges);

}  // namespace sg
