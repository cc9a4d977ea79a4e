// Serialized CoreML.Specification.Model (an .mlpackage's model.mlmodel) -> Program.
//
// Field numbers and the dtype -> TensorValue field table: runtime/format/README.md (from
// coremltools' Model.proto and MIL.proto). The result matches what parse_mil_text gives for
// the compiled model.mil of the same model: opsets normalised ("CoreML6" -> "ios16"), op
// types without opset prefix, op inputs and attributes sorted by name, functions sorted by
// name. Map fields follow protobuf semantics: the last entry for a key wins.
#include "format/list_types.h"
#include "format/model_description.h"
#include "format/protowire.h"
#include "shardgate/blob.h"
#include "shardgate/limits.h"
#include "shardgate/readers.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sg {

using protowire::Context;
using protowire::Field;
using protowire::MessageReader;
using protowire::PathScope;
using protowire::WireType;

namespace {

// --- types -----------------------------------------------------------------------------

Result<ValueType> decode_value_type(MessageReader r);

// Dimension: constant 1 (ConstantDimension.size 1) / unknown 2 (UnknownDimension.variadic 1).
// Sets `variadic` when the dimension stands for any number of dimensions.
Result<int64_t> decode_dimension(MessageReader r, bool& variadic) {
  Context& ctx = r.ctx();
  std::optional<int64_t> dim;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 1) {
      SG_ASSIGN_OR_RETURN(MessageReader c, r.sub(f, "Dimension.constant"));
      uint64_t size = 0;
      while (!c.done()) {
        Field g;
        SG_TRY(c.next(g));
        if (g.number == 1) {
          SG_ASSIGN_OR_RETURN(size, protowire::as_uint64(ctx, g, "ConstantDimension.size"));
          if (size > static_cast<uint64_t>(limits::kMaxDim)) {
            return ctx.error(g.offset, limits::dim_limit_message(size));
          }
        }
      }
      dim = static_cast<int64_t>(size);
    } else if (f.number == 2) {
      SG_ASSIGN_OR_RETURN(MessageReader u, r.sub(f, "Dimension.unknown"));
      variadic = false;
      while (!u.done()) {
        Field g;
        SG_TRY(u.next(g));
        if (g.number == 1) {
          SG_ASSIGN_OR_RETURN(variadic, protowire::as_bool(ctx, g, "variadic"));
        }
      }
      dim = kUnknownDim;
    }
  }
  if (!dim) return ctx.error(r.begin(), "Dimension has neither constant nor unknown set");
  return *dim;
}

// TensorType: dataType 1, rank 2, dimensions 3, attributes 4 (not needed).
Status decode_tensor_type(MessageReader r, ValueType& t) {
  Context& ctx = r.ctx();
  t.kind = ValueType::Kind::kTensor;
  int64_t data_type = 0;
  std::optional<int64_t> rank;
  size_t first_offset = r.begin();
  bool variadic_dim = false;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 1) {
      SG_ASSIGN_OR_RETURN(data_type, protowire::as_int64(ctx, f, "TensorType.dataType"));
      first_offset = f.offset;
    } else if (f.number == 2) {
      SG_ASSIGN_OR_RETURN(const int64_t v, protowire::as_int64(ctx, f, "TensorType.rank"));
      if (v != -1 && !limits::rank_in_limit(v)) {  // -1: rank not known
        return ctx.error(f.offset, limits::rank_limit_message(v));
      }
      rank = v;
    } else if (f.number == 3) {
      if (t.shape.size() >= limits::kMaxRank) {
        return ctx.error(f.offset, limits::rank_limit_message(
                                       fmt::format("{} or more", limits::kMaxRank + 1)));
      }
      PathScope scope(ctx, fmt::format(".dimensions[{}]", t.shape.size()));
      SG_ASSIGN_OR_RETURN(MessageReader d, r.sub(f, "TensorType.dimensions"));
      bool variadic = false;
      SG_ASSIGN_OR_RETURN(const int64_t dim, decode_dimension(d, variadic));
      variadic_dim = variadic_dim || variadic;
      t.shape.push_back(dim);
    }
  }
  if (data_type == 0) return ctx.error(first_offset, "TensorType has no dataType");
  const auto dtype = data_type >= INT32_MIN && data_type <= INT32_MAX
                         ? dtype_from_proto(static_cast<int>(data_type))
                         : std::nullopt;
  if (!dtype) {
    return ctx.error(first_offset, fmt::format("unknown DataType {}", data_type),
                     ErrorCode::kUnsupported);
  }
  t.dtype = *dtype;
  if (rank && *rank == -1) {
    if (!t.shape.empty()) {
      return ctx.error(r.begin(), fmt::format("rank -1 (unknown) with {} dimensions listed",
                                              t.shape.size()));
    }
    t.rank_known = false;
  } else if (rank && *rank != static_cast<int64_t>(t.shape.size())) {
    return ctx.error(r.begin(), fmt::format("rank {} but {} dimensions listed", *rank,
                                            t.shape.size()));
  }
  if (variadic_dim) t.rank_known = false;
  // Guard the product of the known dims so later element counts cannot overflow.
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0) continue;
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxTensorBytes) {
      return ctx.error(r.begin(), fmt::format("shape {} has more than {} elements",
                                              shape_str(t.shape), kMaxTensorBytes));
    }
  }
  return Status::ok();
}

Result<ValueType> decode_member_type(const MessageReader& parent, const Field& f,
                                     std::string label) {
  PathScope scope(parent.ctx(), "." + label);
  SG_ASSIGN_OR_RETURN(MessageReader m, parent.sub(f, label));
  return decode_value_type(m);
}

// ValueType oneof: tensorType 1, listType 2, tupleType 3, dictionaryType 4, stateType 5.
Result<ValueType> decode_value_type(MessageReader r) {
  Context& ctx = r.ctx();
  ValueType t;
  bool has_type = false;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number < 1 || f.number > 5) continue;
    t = ValueType{};
    has_type = true;
    switch (f.number) {
      case 1: {
        PathScope scope(ctx, ".tensorType");
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "ValueType.tensorType"));
        SG_TRY(decode_tensor_type(m, t));
        break;
      }
      case 2: {  // ListType: type 1, length 2
        PathScope scope(ctx, ".listType");
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "ValueType.listType"));
        t.kind = ValueType::Kind::kList;
        while (!m.done()) {
          Field g;
          SG_TRY(m.next(g));
          if (g.number == 1) {
            SG_ASSIGN_OR_RETURN(ValueType e, decode_member_type(m, g, "type"));
            t.members = {std::move(e)};
          } else if (g.number == 2) {
            PathScope inner(ctx, ".length");
            SG_ASSIGN_OR_RETURN(MessageReader d, m.sub(g, "ListType.length"));
            bool variadic = false;
            SG_ASSIGN_OR_RETURN(t.list_length, decode_dimension(d, variadic));
          }
        }
        if (t.members.empty()) return ctx.error(m.begin(), "ListType has no element type");
        break;
      }
      case 3: {  // TupleType: types 1
        PathScope scope(ctx, ".tupleType");
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "ValueType.tupleType"));
        t.kind = ValueType::Kind::kTuple;
        while (!m.done()) {
          Field g;
          SG_TRY(m.next(g));
          if (g.number != 1) continue;
          SG_ASSIGN_OR_RETURN(ValueType e,
                              decode_member_type(m, g, fmt::format("types[{}]", t.members.size())));
          t.members.push_back(std::move(e));
        }
        break;
      }
      case 4: {  // DictionaryType: keyType 1, valueType 2
        PathScope scope(ctx, ".dictionaryType");
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "ValueType.dictionaryType"));
        t.kind = ValueType::Kind::kDict;
        std::optional<ValueType> key, value;
        while (!m.done()) {
          Field g;
          SG_TRY(m.next(g));
          if (g.number == 1) {
            SG_ASSIGN_OR_RETURN(key, decode_member_type(m, g, "keyType"));
          } else if (g.number == 2) {
            SG_ASSIGN_OR_RETURN(value, decode_member_type(m, g, "valueType"));
          }
        }
        if (!key || !value) {
          return ctx.error(m.begin(), "DictionaryType needs both keyType and valueType");
        }
        t.members = {std::move(*key), std::move(*value)};
        break;
      }
      case 5: {  // StateType: wrappedType 1
        PathScope scope(ctx, ".stateType");
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "ValueType.stateType"));
        t.kind = ValueType::Kind::kState;
        while (!m.done()) {
          Field g;
          SG_TRY(m.next(g));
          if (g.number != 1) continue;
          SG_ASSIGN_OR_RETURN(ValueType e, decode_member_type(m, g, "wrappedType"));
          t.members = {std::move(e)};
        }
        if (t.members.empty()) return ctx.error(m.begin(), "StateType has no wrappedType");
        break;
      }
      default:
        break;
    }
  }
  if (!has_type) return ctx.error(r.begin(), "ValueType has no type set");
  return t;
}

// NamedValueType: name 1, type 2.
Result<NamedType> decode_named_type(MessageReader r) {
  Context& ctx = r.ctx();
  NamedType nt;
  bool has_type = false;
  size_t type_offset = r.begin();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 1) {
      SG_ASSIGN_OR_RETURN(nt.name, protowire::as_string(ctx, f, "NamedValueType.name"));
    } else if (f.number == 2) {
      PathScope scope(ctx, ".type");
      SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "NamedValueType.type"));
      SG_ASSIGN_OR_RETURN(nt.type, decode_value_type(m));
      has_type = true;
      type_offset = f.offset;
    }
  }
  if (nt.name.empty()) return ctx.error(r.begin(), "NamedValueType has no name");
  if (!has_type) return ctx.error(type_offset, fmt::format("'{}' has no type", nt.name));
  return nt;
}

// A repeated NamedValueType field (function, block or op inputs/outputs): appends one entry,
// with ".label[i]" in the error path.
Status append_named_type(const MessageReader& parent, const Field& f, std::string_view label,
                         std::string_view what, std::vector<NamedType>& out) {
  PathScope scope(parent.ctx(), fmt::format(".{}[{}]", label, out.size()));
  SG_ASSIGN_OR_RETURN(MessageReader m, parent.sub(f, what));
  SG_ASSIGN_OR_RETURN(NamedType nt, decode_named_type(m));
  out.push_back(std::move(nt));
  return Status::ok();
}

// --- values ----------------------------------------------------------------------------

// Which TensorValue field holds an immediate of each dtype (runtime/format/README.md,
// Protobuf fields).
enum TensorField : uint32_t {
  kFloats = 1,
  kInts = 2,
  kBools = 3,
  kStrings = 4,
  kLongInts = 5,
  kDoubles = 6,
  kBytes = 7,
};

const char* tensor_field_name(uint32_t n) {
  switch (n) {
    case kFloats: return "floats";
    case kInts: return "ints";
    case kBools: return "bools";
    case kStrings: return "strings";
    case kLongInts: return "longInts";
    case kDoubles: return "doubles";
    case kBytes: return "bytes";
  }
  return "?";
}

uint32_t tensor_field_for(DType t) {
  switch (t) {
    case DType::kF32: return kFloats;
    case DType::kF64: return kDoubles;
    case DType::kI32:
    case DType::kI16:
    case DType::kU16: return kInts;
    case DType::kI64:
    case DType::kU64: return kLongInts;
    case DType::kBool: return kBools;
    case DType::kString: return kStrings;
    default: return kBytes;  // fp16, bf16, fp8, int8, uint8, uint32 and the sub-byte types
  }
}

// Copies `count` fixed-size elements into a fresh tensor of `dtype`/`shape`.
Result<Tensor> make_tensor(DType dtype, const Shape& shape, const void* data, size_t nbytes) {
  SG_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(dtype, shape));
  if (nbytes != 0) std::memcpy(t.mutable_raw(), data, nbytes);
  return t;
}

// TensorValue -> Tensor of the declared dtype and shape. Element counts are checked before
// anything is allocated, so a declared shape cannot make us allocate more than the file holds.
Result<Tensor> decode_tensor_value(MessageReader r, const ValueType& type) {
  Context& ctx = r.ctx();
  const DType dtype = type.dtype;
  const Shape& shape = type.shape;
  const std::string type_str = type.to_string();
  if (!type.rank_known || type.has_unknown_dims()) {
    return ctx.error(r.begin(), fmt::format("immediate value of {} with unknown dimensions",
                                            type_str));
  }
  const int64_t numel = sg::numel(shape);  // bounded by decode_tensor_type
  Field chosen;
  bool has_field = false;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number >= kFloats && f.number <= kBytes) {
      chosen = f;
      has_field = true;
    }
  }
  if (!has_field) {
    if (numel != 0) {
      return ctx.error(r.begin(), fmt::format("TensorValue is empty but {} needs {} elements",
                                              type_str, numel));
    }
    if (dtype == DType::kString) return Tensor::from_strings(shape, {});
    return Tensor::zeros(dtype, shape);
  }
  const uint32_t expected = tensor_field_for(dtype);
  if (chosen.number != expected) {
    return ctx.error(chosen.offset, fmt::format("{} literal stored in TensorValue.{}, expected "
                                                "TensorValue.{}", type_str,
                                                tensor_field_name(chosen.number),
                                                tensor_field_name(expected)));
  }
  PathScope scope(ctx, fmt::format(".{}", tensor_field_name(chosen.number)));
  SG_ASSIGN_OR_RETURN(MessageReader values, r.sub(chosen, tensor_field_name(chosen.number)));
  const auto count_error = [&](size_t have) {
    return ctx.error(chosen.offset, fmt::format("{} values for {} ({} elements)", have, type_str,
                                                numel));
  };
  switch (chosen.number) {
    case kFloats: {
      std::vector<uint32_t> bits;
      while (!values.done()) {
        Field f;
        SG_TRY(values.next(f));
        if (f.number == 1) SG_TRY(protowire::append_fixed32(ctx, f, "floats.values", bits));
      }
      if (bits.size() != static_cast<size_t>(numel)) return count_error(bits.size());
      return make_tensor(dtype, shape, bits.data(), bits.size() * 4);
    }
    case kDoubles: {
      std::vector<uint64_t> bits;
      while (!values.done()) {
        Field f;
        SG_TRY(values.next(f));
        if (f.number == 1) SG_TRY(protowire::append_fixed64(ctx, f, "doubles.values", bits));
      }
      if (bits.size() != static_cast<size_t>(numel)) return count_error(bits.size());
      return make_tensor(dtype, shape, bits.data(), bits.size() * 8);
    }
    case kInts:
    case kLongInts:
    case kBools: {
      std::vector<uint64_t> raw;
      Field last;
      while (!values.done()) {
        Field f;
        SG_TRY(values.next(f));
        if (f.number == 1) {
          SG_TRY(protowire::append_varints(ctx, f, "values", raw));
          last = f;
        }
      }
      if (raw.size() != static_cast<size_t>(numel)) return count_error(raw.size());
      SG_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(dtype, shape));
      std::byte* out = t.mutable_raw();
      for (size_t i = 0; i < raw.size(); ++i) {
        const auto v = static_cast<int64_t>(raw[i]);
        int64_t lo = INT64_MIN, hi = INT64_MAX;
        switch (dtype) {
          case DType::kI32: lo = INT32_MIN; hi = INT32_MAX; break;
          case DType::kI16: lo = INT16_MIN; hi = INT16_MAX; break;
          case DType::kU16: lo = 0; hi = UINT16_MAX; break;
          default: break;
        }
        if (v < lo || v > hi) {
          return ctx.error(last.offset, fmt::format("element {} = {} does not fit {}", i, v,
                                                    dtype_name(dtype)));
        }
        switch (dtype) {
          case DType::kI32: {
            const auto x = static_cast<int32_t>(v);
            std::memcpy(out + i * 4, &x, 4);
            break;
          }
          case DType::kI16:
          case DType::kU16: {
            const auto x = static_cast<uint16_t>(static_cast<uint64_t>(v) & 0xffffu);
            std::memcpy(out + i * 2, &x, 2);
            break;
          }
          case DType::kBool: out[i] = static_cast<std::byte>(raw[i] != 0 ? 1 : 0); break;
          default: std::memcpy(out + i * 8, &raw[i], 8); break;  // int64 / uint64 bits
        }
      }
      return t;
    }
    case kStrings: {
      std::vector<std::string> strings;
      while (!values.done()) {
        Field f;
        SG_TRY(values.next(f));
        if (f.number != 1) continue;
        SG_ASSIGN_OR_RETURN(std::string s, protowire::as_string(ctx, f, "strings.values"));
        strings.push_back(std::move(s));
      }
      if (strings.size() != static_cast<size_t>(numel)) return count_error(strings.size());
      return Tensor::from_strings(shape, std::move(strings));
    }
    case kBytes: {
      Field data;
      bool has_data = false;
      while (!values.done()) {
        Field f;
        SG_TRY(values.next(f));
        if (f.number != 1) continue;
        SG_TRY(protowire::expect_type(ctx, f, WireType::kLen, "bytes.values"));
        data = f;
        has_data = true;
      }
      const size_t need = dtype_storage_bytes(dtype, static_cast<size_t>(numel));
      const size_t have = has_data ? data.size() : 0;
      if (have != need) {
        return ctx.error(has_data ? data.offset : chosen.offset,
                         fmt::format("{} bytes for {} ({} bytes needed)", have, type_str, need));
      }
      return make_tensor(dtype, shape, ctx.data().data() + data.begin, need);
    }
    default:
      break;
  }
  return ctx.error(chosen.offset, "unreachable TensorValue field", ErrorCode::kInternal);
}

Result<Value> decode_value(MessageReader r, const ValueType* fallback);

const char* kind_name(ValueType::Kind k) {
  switch (k) {
    case ValueType::Kind::kTensor: return "tensor";
    case ValueType::Kind::kState: return "state";
    case ValueType::Kind::kList: return "list";
    case ValueType::Kind::kTuple: return "tuple";
    case ValueType::Kind::kDict: return "dict";
  }
  return "?";
}

// Reads the repeated Value field 1 of a TupleValue / ListValue. Elements without their own
// type take the declared member type.
Status decode_value_list(MessageReader r, const ValueType& type, Value& out) {
  Context& ctx = r.ctx();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number != 1) continue;
    const size_t i = out.elements.size();
    const ValueType* member = nullptr;
    if (type.kind == ValueType::Kind::kList) {
      member = &type.members[0];
    } else if (i < type.members.size()) {
      member = &type.members[i];
    } else {
      return ctx.error(f.offset, fmt::format("{} holds more than {} values", type.to_string(),
                                             type.members.size()));
    }
    PathScope scope(ctx, fmt::format("[{}]", i));
    SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "values"));
    SG_ASSIGN_OR_RETURN(Value v, decode_value(m, member));
    out.elements.push_back(std::move(v));
  }
  if (type.kind == ValueType::Kind::kTuple && out.elements.size() != type.members.size()) {
    return ctx.error(r.begin(), fmt::format("{} holds {} values", type.to_string(),
                                            out.elements.size()));
  }
  if (type.kind == ValueType::Kind::kList && type.list_length >= 0 &&
      static_cast<int64_t>(out.elements.size()) != type.list_length) {
    return ctx.error(r.begin(), fmt::format("{} holds {} values", type.to_string(),
                                            out.elements.size()));
  }
  return Status::ok();
}

// DictionaryValue: values 1 (KeyValuePair: key 1, value 2).
Status decode_dict_value(MessageReader r, const ValueType& type, Value& out) {
  Context& ctx = r.ctx();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number != 1) continue;
    PathScope scope(ctx, fmt::format("[{}]", out.entries.size()));
    SG_ASSIGN_OR_RETURN(MessageReader pair, r.sub(f, "DictionaryValue.values"));
    std::optional<Value> key, value;
    while (!pair.done()) {
      Field g;
      SG_TRY(pair.next(g));
      if (g.number == 1) {
        PathScope inner(ctx, ".key");
        SG_ASSIGN_OR_RETURN(MessageReader m, pair.sub(g, "key"));
        SG_ASSIGN_OR_RETURN(key, decode_value(m, &type.members[0]));
      } else if (g.number == 2) {
        PathScope inner(ctx, ".value");
        SG_ASSIGN_OR_RETURN(MessageReader m, pair.sub(g, "value"));
        SG_ASSIGN_OR_RETURN(value, decode_value(m, &type.members[1]));
      }
    }
    if (!key || !value) return ctx.error(f.offset, "dictionary entry needs a key and a value");
    out.entries.push_back({std::move(*key), std::move(*value)});
  }
  return Status::ok();
}

// ImmediateValue oneof: tensor 1, tuple 2, list 3, dictionary 4.
Status decode_immediate(MessageReader r, Value& v) {
  Context& ctx = r.ctx();
  Field chosen;
  bool has_field = false;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number >= 1 && f.number <= 4) {
      chosen = f;
      has_field = true;
    }
  }
  if (!has_field) return ctx.error(r.begin(), "ImmediateValue has no value set");
  static constexpr ValueType::Kind kKinds[] = {ValueType::Kind::kTensor, ValueType::Kind::kTuple,
                                               ValueType::Kind::kList, ValueType::Kind::kDict};
  static constexpr const char* kNames[] = {"tensor", "tuple", "list", "dictionary"};
  const ValueType::Kind kind = kKinds[chosen.number - 1];
  if (v.type.kind != kind) {
    return ctx.error(chosen.offset, fmt::format("ImmediateValue.{} for a value of type {} ({})",
                                                kNames[chosen.number - 1], v.type.to_string(),
                                                kind_name(v.type.kind)));
  }
  PathScope scope(ctx, fmt::format(".{}", kNames[chosen.number - 1]));
  SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(chosen, kNames[chosen.number - 1]));
  switch (kind) {
    case ValueType::Kind::kTensor: {
      auto t = decode_tensor_value(m, v.type);
      if (!t) {
        // Errors of the decoder name the file; one from allocating the tensor (the memory
        // budget) does not, so it gets the file, offset and field path here.
        Status s = std::move(t).take_status();
        if (s.message().starts_with(ctx.filename() + ": ")) return s;
        return ctx.error(chosen.offset, s.message(), s.code());
      }
      v.tensor = std::move(t).value();
      return Status::ok();
    }
    case ValueType::Kind::kTuple:
    case ValueType::Kind::kList: return decode_value_list(m, v.type, v);
    case ValueType::Kind::kDict: return decode_dict_value(m, v.type, v);
    default: break;
  }
  return Status::ok();
}

// BlobFileValue: fileName 1, offset 2.
Result<BlobRef> decode_blob(MessageReader r) {
  Context& ctx = r.ctx();
  BlobRef ref;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 1) {
      SG_ASSIGN_OR_RETURN(ref.path, protowire::as_string(ctx, f, "BlobFileValue.fileName"));
    } else if (f.number == 2) {
      SG_ASSIGN_OR_RETURN(ref.offset, protowire::as_uint64(ctx, f, "BlobFileValue.offset"));
    }
  }
  if (ref.path.empty()) return ctx.error(r.begin(), "BlobFileValue has no fileName");
  return ref;
}

// Value: docString 1, type 2, immediateValue 3 / blobFileValue 5. The type may follow the
// payload on the wire, so fields are located first and decoded afterwards.
Result<Value> decode_value(MessageReader r, const ValueType* fallback) {
  Context& ctx = r.ctx();
  std::optional<Field> type_field, payload_field;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 2) type_field = f;
    if (f.number == 3 || f.number == 5) payload_field = f;
  }
  Value v;
  if (type_field) {
    PathScope scope(ctx, ".type");
    SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(*type_field, "Value.type"));
    SG_ASSIGN_OR_RETURN(v.type, decode_value_type(m));
  } else if (fallback) {
    v.type = *fallback;
  } else {
    return ctx.error(r.begin(), "Value has no type");
  }
  if (!payload_field) {
    return ctx.error(r.begin(), "Value has neither immediateValue nor blobFileValue");
  }
  if (payload_field->number == 5) {
    if (!v.type.is_tensor()) {
      return ctx.error(payload_field->offset, fmt::format("blobFileValue for a value of type {}",
                                                          v.type.to_string()));
    }
    PathScope scope(ctx, ".blobFileValue");
    SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(*payload_field, "Value.blobFileValue"));
    SG_ASSIGN_OR_RETURN(BlobRef ref, decode_blob(m));
    v.blob = std::move(ref);
    return v;
  }
  PathScope scope(ctx, ".immediateValue");
  SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(*payload_field, "Value.immediateValue"));
  SG_TRY(decode_immediate(m, v));
  return v;
}

// A map<string, Value> field (attributes) into a sorted vector; the last entry for a key wins.
Status add_value_entry(const MessageReader& parent, const Field& f, std::string_view label,
                       std::map<std::string, Value>& out) {
  Context& ctx = parent.ctx();
  SG_ASSIGN_OR_RETURN(protowire::MapEntry e, protowire::read_map_entry(parent, f, label));
  PathScope scope(ctx, fmt::format(".{}[{}]", label, e.key));
  if (e.key.empty()) return ctx.error(f.offset, "map entry with an empty key");
  SG_ASSIGN_OR_RETURN(Value v, decode_value(e.value_reader(ctx), nullptr));
  out[e.key] = std::move(v);
  return Status::ok();
}

template <typename T>
std::vector<std::pair<std::string, T>> to_sorted_vector(std::map<std::string, T>&& m) {
  std::vector<std::pair<std::string, T>> out;
  out.reserve(m.size());
  for (auto& [k, v] : m) out.emplace_back(k, std::move(v));
  return out;
}

// --- operations and blocks -------------------------------------------------------------

Status decode_block(MessageReader r, Block& block);

// Argument: arguments 1 (Binding: name 1 / value 2).
Result<Argument> decode_argument(MessageReader r) {
  Context& ctx = r.ctx();
  Argument arg;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number != 1) continue;
    PathScope scope(ctx, fmt::format("[{}]", arg.bindings.size()));
    SG_ASSIGN_OR_RETURN(MessageReader b, r.sub(f, "Argument.arguments"));
    Binding binding;
    bool has_binding = false;
    while (!b.done()) {
      Field g;
      SG_TRY(b.next(g));
      if (g.number == 1) {
        SG_ASSIGN_OR_RETURN(binding.name, protowire::as_string(ctx, g, "Binding.name"));
        if (binding.name.empty()) return ctx.error(g.offset, "binding with an empty name");
        binding.literal.reset();
        has_binding = true;
      } else if (g.number == 2) {
        PathScope inner(ctx, ".value");
        SG_ASSIGN_OR_RETURN(MessageReader m, b.sub(g, "Binding.value"));
        SG_ASSIGN_OR_RETURN(Value v, decode_value(m, nullptr));
        binding.name.clear();
        binding.literal = std::move(v);
        has_binding = true;
      }
    }
    if (!has_binding) return ctx.error(f.offset, "binding has neither a name nor a value");
    arg.bindings.push_back(std::move(binding));
  }
  if (arg.bindings.empty()) return ctx.error(r.begin(), "argument has no bindings");
  arg.is_tuple = arg.bindings.size() > 1;
  return arg;
}

// Operation: type 1, inputs 2, outputs 3, blocks 4, attributes 5.
Status decode_operation(MessageReader r, Op& op) {
  Context& ctx = r.ctx();
  std::map<std::string, Argument> inputs;
  std::map<std::string, Value> attributes;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: {
        SG_ASSIGN_OR_RETURN(const std::string type,
                            protowire::as_string(ctx, f, "Operation.type"));
        op.type = normalize_op_type(type);
        break;
      }
      case 2: {
        SG_ASSIGN_OR_RETURN(protowire::MapEntry e,
                            protowire::read_map_entry(r, f, "Operation.inputs"));
        PathScope scope(ctx, fmt::format(".inputs[{}]", e.key));
        if (e.key.empty()) return ctx.error(f.offset, "input with an empty name");
        SG_ASSIGN_OR_RETURN(Argument a, decode_argument(e.value_reader(ctx)));
        inputs[e.key] = std::move(a);
        break;
      }
      case 3: {
        SG_TRY(append_named_type(r, f, "outputs", "Operation.outputs", op.outputs));
        break;
      }
      case 4: {
        PathScope scope(ctx, fmt::format(".blocks[{}]", op.blocks.size()));
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "Operation.blocks"));
        Block b;
        SG_TRY(decode_block(m, b));
        op.blocks.push_back(std::move(b));
        break;
      }
      case 5:
        SG_TRY(add_value_entry(r, f, "attributes", attributes));
        break;
      default:
        break;
    }
  }
  if (op.type.empty()) return ctx.error(r.begin(), "operation has no type");
  op.inputs = to_sorted_vector(std::move(inputs));
  op.attributes = to_sorted_vector(std::move(attributes));
  op.line = 0;
  return Status::ok();
}

// Block: inputs 1, outputs 2, operations 3, attributes 4 (not needed).
Status decode_block(MessageReader r, Block& block) {
  Context& ctx = r.ctx();
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: {
        SG_TRY(append_named_type(r, f, "inputs", "Block.inputs", block.inputs));
        break;
      }
      case 2: {
        SG_ASSIGN_OR_RETURN(std::string name, protowire::as_string(ctx, f, "Block.outputs"));
        if (name.empty()) return ctx.error(f.offset, "empty block output name");
        block.outputs.push_back(std::move(name));
        break;
      }
      case 3: {
        const auto index = static_cast<int64_t>(block.ops.size());
        PathScope scope(ctx, fmt::format(".operations[{}]", index));
        SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "Block.operations"));
        Op op;
        op.index = index;
        SG_TRY(decode_operation(m, op));
        block.ops.push_back(std::move(op));
        break;
      }
      default:
        break;
    }
  }
  return Status::ok();
}

// Function: inputs 1, opset 2, block_specializations 3, attributes 4. Only the block for the
// function's own opset is read (runtime/format/README.md, Protobuf fields); others are skipped.
Status decode_function(MessageReader r, Function& fn) {
  Context& ctx = r.ctx();
  std::string opset;
  std::map<std::string, protowire::MapEntry> blocks;
  std::map<std::string, Value> attributes;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: {
        SG_TRY(append_named_type(r, f, "inputs", "Function.inputs", fn.inputs));
        break;
      }
      case 2: {
        SG_ASSIGN_OR_RETURN(opset, protowire::as_string(ctx, f, "Function.opset"));
        break;
      }
      case 3: {
        SG_ASSIGN_OR_RETURN(protowire::MapEntry e,
                            protowire::read_map_entry(r, f, "Function.block_specializations"));
        blocks[e.key] = e;
        break;
      }
      case 4:
        SG_TRY(add_value_entry(r, f, "attributes", attributes));
        break;
      default:
        break;
    }
  }
  if (opset.empty()) return ctx.error(r.begin(), "function has no opset");
  const auto it = blocks.find(opset);
  if (it == blocks.end()) {
    std::string have;
    for (const auto& [k, e] : blocks) have += (have.empty() ? "" : ", ") + k;
    return ctx.error(r.begin(), fmt::format("no block specialization for opset '{}' (have: {})",
                                            opset, have.empty() ? "none" : have));
  }
  {
    PathScope scope(ctx, fmt::format(".block_specializations[{}]", opset));
    SG_TRY(decode_block(it->second.value_reader(ctx), fn.block));
  }
  fn.opset = normalize_opset(opset);
  fn.attributes = to_sorted_vector(std::move(attributes));
  return Status::ok();
}

// Program: version 1, functions 2, docString 3, attributes 4.
Status decode_program(MessageReader r, Program& program) {
  Context& ctx = r.ctx();
  int64_t version = 0;
  std::map<std::string, Function> functions;
  std::map<std::string, Value> attributes;
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    switch (f.number) {
      case 1: {
        SG_ASSIGN_OR_RETURN(version, protowire::as_int64(ctx, f, "Program.version"));
        break;
      }
      case 2: {
        SG_ASSIGN_OR_RETURN(protowire::MapEntry e,
                            protowire::read_map_entry(r, f, "Program.functions"));
        PathScope scope(ctx, fmt::format(".functions[{}]", e.key));
        if (e.key.empty()) return ctx.error(f.offset, "function with an empty name");
        Function fn;
        fn.name = e.key;
        SG_TRY(decode_function(e.value_reader(ctx), fn));
        functions[e.key] = std::move(fn);
        break;
      }
      case 4:
        SG_TRY(add_value_entry(r, f, "attributes", attributes));
        break;
      default:
        break;
    }
  }
  if (functions.empty()) return ctx.error(r.begin(), "program has no functions");
  program.version = std::to_string(version);
  for (auto& [name, fn] : functions) program.functions.push_back(std::move(fn));
  program.attributes = to_sorted_vector(std::move(attributes));
  program.source = SourceFormat::kProtobuf;
  return Status::ok();
}

}  // namespace

// Model: specificationVersion 1, description 2, isUpdatable 10, the model-type oneof from
// field 200 on (mlProgram 502; pipelines 200-202, neural networks 500-501, ...).
Result<ProtoModel> parse_model_proto(std::span<const std::byte> data, const std::string& filename) {
  Context ctx(data, filename);
  PathScope root(ctx, "Model");
  MessageReader r = MessageReader::root(ctx);
  ProtoModel model;
  bool has_program = false;
  uint32_t other_type = 0;
  if (data.empty()) return ctx.error(0, "empty file");
  while (!r.done()) {
    Field f;
    SG_TRY(r.next(f));
    if (f.number == 1) {
      SG_ASSIGN_OR_RETURN(model.info.spec_version,
                          protowire::as_int32(ctx, f, "specificationVersion"));
    } else if (f.number == 2) {
      PathScope scope(ctx, ".description");
      SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "Model.description"));
      ModelInfo info;
      SG_TRY(decode_model_description(m, info));
      info.spec_version = model.info.spec_version;
      model.info = std::move(info);
    } else if (f.number == 502) {
      PathScope scope(ctx, ".mlProgram");
      SG_ASSIGN_OR_RETURN(MessageReader m, r.sub(f, "Model.mlProgram"));
      Program program;
      SG_TRY(decode_program(m, program));
      model.program = std::move(program);
      has_program = true;
    } else if (f.number >= 200 && f.type == WireType::kLen) {
      other_type = f.number;
    }
  }
  if (!has_program) {
    if (other_type != 0) {
      return ctx.error(0, fmt::format("not an ML program: the model type is field {} (an ML "
                                      "program is field 502)", other_type),
                       ErrorCode::kUnsupported);
    }
    return ctx.error(0, "no mlProgram (field 502) in the model");
  }
  mark_dynamic_lists(model.program);
  return model;
}

}  // namespace sg
