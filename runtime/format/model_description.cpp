// CoreML.Specification.ModelDescription -> ModelInfo. Field numbers:
// runtime/format/README.md, Protobuf fields (Model.proto, FeatureTypes.proto).
#include "format/model_description.h"

#include "shardgate/limits.h"

#include <string>

namespace sg {

using protowire::Context;
using protowire::Field;
using protowire::MessageReader;
using protowire::PathScope;

std::optional<DType> dtype_from_array_data_type(int64_t value) {
  switch (value) {
    case 0x10010: return DType::kF16;
    case 0x10020: return DType::kF32;
    case 0x10040: return DType::kF64;
    case 0x20020: return DType::kI32;
    case 0x20008: return DType::kI8;
    default: return std::nullopt;
  }
}

Result<Shape> fold_enumerated_shapes(const Shape& default_shape,
                                     const std::vector<Shape>& shapes) {
  if (shapes.empty()) return default_shape;
  Shape out = default_shape.empty() ? shapes.front() : default_shape;
  for (const Shape& s : shapes) {
    SG_CHECK(s.size() == out.size(), ErrorCode::kFormat,
             "enumerated shape {} has rank {}, the feature has rank {}", shape_str(s), s.size(),
             out.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != out[i]) out[i] = kUnknownDim;
    }
  }
  return out;
}

Result<Shape> fold_shape_ranges(const Shape& default_shape,
                                const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  if (ranges.empty()) return default_shape;
  SG_CHECK(default_shape.empty() || default_shape.size() == ranges.size(), ErrorCode::kFormat,
           "{} size ranges for a feature of rank {}", ranges.size(), default_shape.size());
  Shape out(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [lo, hi] = ranges[i];
    SG_CHECK(lo >= 0 && (hi < 0 || hi >= lo), ErrorCode::kFormat,
             "size range {} of dimension {} is empty", fmt::format("[{}, {}]", lo, hi), i);
    out[i] = (lo == hi) ? lo : kUnknownDim;
  }
  return out;
}

namespace {

// A repeated int64 shape (ArrayFeatureType.shape, EnumeratedShapes.Shape.shape).
Status read_shape_field(const Context& ctx, const Field& f, std::string_view what, Shape& out) {
  std::vector<uint64_t> raw;
  SG_TRY(protowire::append_varints(ctx, f, what, raw));
  if (out.size() + raw.size() > limits::kMaxRank) {
    return ctx.error(f.offset, fmt::format("{}: {}", what, limits::rank_limit_message(
                                                               static_cast<int64_t>(out.size() + raw.size()))));
  }
  for (uint64_t u : raw) {
    if (u > static_cast<uint64_t>(limits::kMaxDim)) {
      return ctx.error(f.offset, fmt::format("{}: {}", what, limits::dim_limit_message(u)));
    }
    out.push_back(static_cast<int64_t>(u));
  }
  return Status::ok();
}

Status decode_enumerated_shapes(MessageReader r, std::vector<Shape>& shapes) {
  Context& ctx = r.ctx();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number != 1) continue;
    PathScope scope(ctx, fmt::format(".shapes[{}]", shapes.size()));
    SG_ASSIGN_OR_RETURN(MessageReader s, r.sub(f, "EnumeratedShapes.shapes"));
    Shape shape;
    while (!s.done()) {
      Field g;
      SG_TRY(s.next(g));
      if (g.number == 1) SG_TRY(read_shape_field(ctx, g, "Shape.shape", shape));
    }
    shapes.push_back(std::move(shape));
  }
  return Status::ok();
}

Status decode_shape_range(MessageReader r, std::vector<std::pair<int64_t, int64_t>>& ranges) {
  Context& ctx = r.ctx();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number != 1) continue;
    PathScope scope(ctx, fmt::format(".sizeRanges[{}]", ranges.size()));
    SG_ASSIGN_OR_RETURN(MessageReader s, r.sub(f, "ShapeRange.sizeRanges"));
    int64_t lo = 0;
    int64_t hi = 0;
    while (!s.done()) {
      Field g;
      SG_TRY(s.next(g));
      if (g.number == 1) {
        SG_ASSIGN_OR_RETURN(const uint64_t v, protowire::as_uint64(ctx, g, "lowerBound"));
        if (v > static_cast<uint64_t>(limits::kMaxDim)) {
          return ctx.error(g.offset, fmt::format("lowerBound: {}", limits::dim_limit_message(v)));
        }
        lo = static_cast<int64_t>(v);
      } else if (g.number == 2) {
        SG_ASSIGN_OR_RETURN(hi, protowire::as_int64(ctx, g, "upperBound"));
      }
    }
    if (hi >= 0 && hi < lo) {
      return ctx.error(f.offset, fmt::format("size range [{}, {}] is empty", lo, hi));
    }
    ranges.emplace_back(lo, hi);
  }
  return Status::ok();
}

// ArrayFeatureType: shape 1, dataType 2, enumeratedShapes 21, shapeRange 31.
Status decode_array_type(MessageReader r, FeatureInfo& feature) {
  Context& ctx = r.ctx();
  const size_t start = r.begin();
  Shape shape;
  std::vector<Shape> enumerated;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t data_type = 0;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1:
        SG_TRY(read_shape_field(ctx, f, "ArrayFeatureType.shape", shape));
        break;
      case 2: {
        SG_ASSIGN_OR_RETURN(data_type, protowire::as_int64(ctx, f, "ArrayFeatureType.dataType"));
        break;
      }
      case 21: {
        PathScope scope(ctx, ".enumeratedShapes");
        SG_ASSIGN_OR_RETURN(MessageReader s, r.sub(f, "enumeratedShapes"));
        SG_TRY(decode_enumerated_shapes(s, enumerated));
        feature.flexible = true;
        break;
      }
      case 31: {
        PathScope scope(ctx, ".shapeRange");
        SG_ASSIGN_OR_RETURN(MessageReader s, r.sub(f, "shapeRange"));
        SG_TRY(decode_shape_range(s, ranges));
        feature.flexible = true;
        feature.range_flexible = true;
        break;
      }
      default:
        break;
    }
  }
  const auto dtype = dtype_from_array_data_type(data_type);
  if (!dtype) {
    return ctx.error(start, fmt::format("unknown ArrayDataType {}", data_type),
                     data_type == 0 ? ErrorCode::kFormat : ErrorCode::kUnsupported);
  }
  feature.dtype = *dtype;
  if (feature.flexible) feature.default_shape = shape;
  Result<Shape> folded = feature.range_flexible ? fold_shape_ranges(shape, ranges)
                                                : fold_enumerated_shapes(shape, enumerated);
  if (!folded) return ctx.error(start, folded.status().message());
  feature.shape = std::move(folded).value();
  return Status::ok();
}

// FeatureType: int64Type 1, doubleType 2, stringType 3, imageType 4, multiArrayType 5,
// dictionaryType 6, sequenceType 7, stateType 8 (StateFeatureType.arrayType 1).
Status decode_feature_type(MessageReader r, FeatureInfo& feature) {
  Context& ctx = r.ctx();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: feature.dtype = DType::kI64; break;
      case 2: feature.dtype = DType::kF64; break;
      case 3: feature.dtype = DType::kString; break;
      case 4:
      case 6:
      case 7: feature.dtype = DType::kInvalid; break;  // images, dictionaries, sequences
      case 5: {
        PathScope scope(ctx, ".multiArrayType");
        SG_ASSIGN_OR_RETURN(MessageReader a, r.sub(f, "multiArrayType"));
        SG_TRY(decode_array_type(a, feature));
        break;
      }
      case 8: {
        PathScope scope(ctx, ".stateType");
        SG_ASSIGN_OR_RETURN(MessageReader s, r.sub(f, "stateType"));
        feature.is_state = true;
        while (!s.done()) {
          Field g;
          SG_TRY(s.next(g));
          if (g.number != 1) continue;
          PathScope inner(ctx, ".arrayType");
          SG_ASSIGN_OR_RETURN(MessageReader a, s.sub(g, "StateFeatureType.arrayType"));
          SG_TRY(decode_array_type(a, feature));
        }
        break;
      }
      default:
        break;
    }
  }
  return Status::ok();
}

// FeatureDescription: name 1, shortDescription 2, type 3.
Result<FeatureInfo> decode_feature(MessageReader r, const std::string& function) {
  Context& ctx = r.ctx();
  FeatureInfo feature;
  feature.function = function;
  bool has_name = false;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 1) {
      SG_ASSIGN_OR_RETURN(feature.name, protowire::as_string(ctx, f, "FeatureDescription.name"));
      has_name = true;
    } else if (f.number == 3) {
      PathScope scope(ctx, ".type");
      SG_ASSIGN_OR_RETURN(MessageReader t, r.sub(f, "FeatureDescription.type"));
      SG_TRY(decode_feature_type(t, feature));
    }
  }
  if (!has_name || feature.name.empty()) {
    return ctx.error(r.begin(), "feature has no name");
  }
  return feature;
}

enum class FeatureKind { kInput, kOutput, kState };

Status add_feature(const MessageReader& parent, const Field& f, FeatureKind kind,
                   const std::string& function, std::string_view label, size_t index,
                   ModelInfo& info) {
  Context& ctx = parent.ctx();
  PathScope scope(ctx, fmt::format(".{}[{}]", label, index));
  SG_ASSIGN_OR_RETURN(MessageReader r, parent.sub(f, label));
  SG_ASSIGN_OR_RETURN(FeatureInfo feature, decode_feature(r, function));
  switch (kind) {
    case FeatureKind::kInput: info.inputs.push_back(std::move(feature)); break;
    case FeatureKind::kOutput: info.outputs.push_back(std::move(feature)); break;
    case FeatureKind::kState:
      feature.is_state = true;
      info.states.push_back(std::move(feature));
      break;
  }
  return Status::ok();
}

// FunctionDescription: name 1, input 2, output 3, state 6. The name may follow the features
// on the wire, so features are collected first and tagged afterwards.
Status decode_function_description(MessageReader r, size_t index, ModelInfo& info) {
  Context& ctx = r.ctx();
  ModelInfo local;
  std::string name;
  size_t counts[3] = {0, 0, 0};
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: {
        SG_ASSIGN_OR_RETURN(name, protowire::as_string(ctx, f, "FunctionDescription.name"));
        break;
      }
      case 2: SG_TRY(add_feature(r, f, FeatureKind::kInput, "", "input", counts[0]++, local)); break;
      case 3: SG_TRY(add_feature(r, f, FeatureKind::kOutput, "", "output", counts[1]++, local)); break;
      case 6: SG_TRY(add_feature(r, f, FeatureKind::kState, "", "state", counts[2]++, local)); break;
      default: break;
    }
  }
  if (name.empty()) {
    return ctx.error(r.begin(), fmt::format("functions[{}] has no name", index));
  }
  for (auto* list : {&local.inputs, &local.outputs, &local.states}) {
    for (auto& feature : *list) feature.function = name;
  }
  info.inputs.insert(info.inputs.end(), local.inputs.begin(), local.inputs.end());
  info.outputs.insert(info.outputs.end(), local.outputs.begin(), local.outputs.end());
  info.states.insert(info.states.end(), local.states.begin(), local.states.end());
  return Status::ok();
}

}  // namespace

// ModelDescription: input 1, output 10, state 13, functions 20, defaultFunctionName 21.
Status decode_model_description(MessageReader r, ModelInfo& info) {
  Context& ctx = r.ctx();
  size_t inputs = 0, outputs = 0, states = 0, functions = 0;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: SG_TRY(add_feature(r, f, FeatureKind::kInput, "", "input", inputs++, info)); break;
      case 10: SG_TRY(add_feature(r, f, FeatureKind::kOutput, "", "output", outputs++, info)); break;
      case 13: SG_TRY(add_feature(r, f, FeatureKind::kState, "", "state", states++, info)); break;
      case 20: {
        PathScope scope(ctx, fmt::format(".functions[{}]", functions));
        SG_ASSIGN_OR_RETURN(MessageReader fr, r.sub(f, "ModelDescription.functions"));
        SG_TRY(decode_function_description(fr, functions, info));
        ++functions;
        break;
      }
      case 21: {
        SG_ASSIGN_OR_RETURN(info.default_function,
                            protowire::as_string(ctx, f, "ModelDescription.defaultFunctionName"));
        break;
      }
      default:
        break;
    }
  }
  return Status::ok();
}

}  // namespace sg
