// The placement kind of every MIL op (op_kinds.def): what the op rules of rules.def test
// instead of lists of op names of their own. Independent of the interpreter's op table.
#pragma once

#include <cstdint>
#include <string_view>

namespace sg::placement {

enum class OpKind : uint8_t {
  kNotListed,  // not in op_kinds.def (custom or newer op): the DEFAULT rule
  kCompileTime,
  kControlFlow,
  kRecurrent,
  kScatter,
  kSort,
  kBandPart,
  kState,
  kGather,
  kIndex,
  kConv,
  kConvTranspose,
  kConvQuantized,
  kMatmul,
  kAttention,
  kLayerNorm,
  kOtherNorm,
  kSoftmax,
  kElementwise,
  kElementwiseUnobserved,
  kCast,
  kReduce,
  kArgReduce,
  kLogSumExp,
  kReduceUnobserved,
  kPool,
  kUpsample,
  kResample,
  kDataMovement,
  kDataMovementUnobserved,
  kActivationQuant,
  kUnknown,
};

struct OpKindInfo {
  std::string_view name;
  OpKind kind;
  std::string_view why;  // for kUnknown: why no source places the op
};

// The entry of `type` (opset prefix already removed); nullptr when not listed.
const OpKindInfo* find_op_kind(std::string_view type);
OpKind op_kind(std::string_view type);

}  // namespace sg::placement
