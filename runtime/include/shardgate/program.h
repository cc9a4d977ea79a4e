// The in-memory MIL program: what both readers (model.mil text and the .mlpackage protobuf)
// produce, and what placement, the interpreter and the reports consume.
//
// Program -> Function -> Block -> Op. Op inputs and attributes are kept sorted by name (the
// text prints them sorted; the protobuf holds them in maps), so two readers of the same model
// give equal programs. Large constants are not read at parse time: a literal that lives in
// weight.bin is a BlobRef, resolved (memory-mapped, bounds-checked) when an op needs it.
#pragma once

#include "shardgate/dtype.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sg {

inline constexpr int64_t kUnknownDim = -1;  // "?" in model.mil, Dimension.unknown in proto

struct ValueType {
  enum class Kind : uint8_t { kTensor, kState, kList, kTuple, kDict };
  Kind kind = Kind::kTensor;
  DType dtype = DType::kInvalid;  // element type for kTensor
  Shape shape;                    // kTensor: dims, kUnknownDim for "?"; scalar = rank 0
  bool rank_known = true;         // false only for proto rank -1
  // kState: {wrapped}; kList: {element} (+ list_length); kTuple: members; kDict: {key, value}.
  std::vector<ValueType> members;
  int64_t list_length = kUnknownDim;

  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_scalar() const { return kind == Kind::kTensor && rank_known && shape.empty(); }
  bool has_unknown_dims() const;
  // A concrete shape fits this (tensor) type: any shape when the rank is unknown, else the
  // same rank and every dim equal or kUnknownDim.
  bool accepts(const Shape& s) const;
  std::string to_string() const;  // MIL text spelling, e.g. "tensor<fp16, [1, ?]>"
  bool operator==(const ValueType&) const = default;
};

// A literal stored in blob storage: BLOBFILE(path = ..., offset = ...). `offset` is the offset
// of the blob's metadata record, not of its data (runtime/format/README.md).
struct BlobRef {
  std::string path;  // as written, e.g. "@model_path/weights/weight.bin"
  uint64_t offset = 0;
  bool operator==(const BlobRef&) const = default;
};

struct DictEntry;

// A literal value: a tensor (inline or in a blob), a tuple/list of values, or a dict.
struct Value {
  ValueType type;
  Tensor tensor;                 // inline tensor literal (kTensor, not blob-backed)
  std::optional<BlobRef> blob;   // set when the tensor lives in weight.bin
  std::vector<Value> elements;   // tuple / list members
  std::vector<DictEntry> entries;  // dict entries, in file order

  bool is_blob() const { return blob.has_value(); }
};

// A dict entry: key and value, named as in std::pair. A plain struct rather than
// std::pair<Value, Value> inside Value: clang 14 with libstdc++ 12 instantiates that pair's
// traits while Value is still incomplete and fails (issue 14).
struct DictEntry {
  Value first;   // the key
  Value second;  // the value
};

// One input binding: a reference to a named value or an inline literal.
struct Binding {
  std::string name;             // non-empty for a reference
  std::optional<Value> literal;  // set for an inline value
  bool is_reference() const { return !literal.has_value(); }
};

// An op input. Variadic inputs (concat's `values = (a, b)`) have several bindings.
struct Argument {
  std::vector<Binding> bindings;
  bool is_tuple = false;  // written as "(a, b)" in text / several bindings in proto
};

struct NamedType {
  std::string name;
  ValueType type;
};

struct Block;

struct Op {
  std::string type;  // MIL op type without opset prefix: "conv", "constexpr_lut_to_dense"
  std::vector<std::pair<std::string, Argument>> inputs;  // sorted by name
  std::vector<NamedType> outputs;                         // in declaration order
  std::vector<std::pair<std::string, Value>> attributes;  // sorted by name ("name", "val", ...)
  std::vector<Block> blocks;                               // cond / while_loop bodies
  int64_t index = 0;   // statement index within its block (0-based, consts included)
  int64_t line = 0;    // 1-based line in model.mil; 0 when read from protobuf

  const Argument* input(std::string_view key) const;
  const Value* attribute(std::string_view key) const;
  std::string name() const;  // the "name" attribute, or "" when absent
  bool is_const() const { return type == "const"; }
  bool is_constexpr() const { return type.rfind("constexpr_", 0) == 0; }
  bool is_compile_time() const { return is_const() || is_constexpr(); }
};

struct Block {
  std::vector<NamedType> inputs;  // only nested blocks (while_loop) have inputs
  std::vector<Op> ops;
  std::vector<std::string> outputs;
};

struct Function {
  std::string name;
  std::string opset;  // "ios16", "ios18" (text form; proto "CoreML8" is mapped to "ios18")
  std::vector<NamedType> inputs;  // sorted by name in text; proto order in protobuf
  Block block;
  std::vector<std::pair<std::string, Value>> attributes;  // e.g. FlexibleShapeInformation

  const NamedType* input(std::string_view name) const;
  // The declared type of a value of the function's top-level block: a function input or an op's
  // output; nullptr when none has that name.
  const ValueType* value_type(std::string_view name) const;
};

enum class SourceFormat : uint8_t { kMilText, kProtobuf };

struct Program {
  std::string version;  // "1.0" / "1.3" for text; "1" for protobuf
  std::vector<Function> functions;  // text order; protobuf map sorted by name
  std::vector<std::pair<std::string, Value>> attributes;  // buildInfo etc.
  SourceFormat source = SourceFormat::kMilText;

  const Function* function(std::string_view name) const;
};

// Maps a protobuf opset ("CoreML8") to the text spelling ("ios18"); other strings unchanged.
std::string normalize_opset(std::string_view opset);
// Strips an "iosNN." prefix from an op type: "ios18.conv" -> "conv".
std::string normalize_op_type(std::string_view type);

// The value of `kind` ("DefaultShapes", "RangeDims") for `input` in the function's
// FlexibleShapeInformation attribute (what Apple's compiler writes into model.mil); nullptr when
// it declares none. One reader for the executor's range check, probe's default shapes and the
// placement rule G3.
const Value* flexible_shape_entry(const Function& fn, const char* kind, const std::string& input);

}  // namespace sg
