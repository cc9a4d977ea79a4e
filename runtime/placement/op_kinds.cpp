#include "placement/op_kinds.h"

#include "shardgate/placement.h"

#include <array>

namespace sg::placement {
namespace {

constexpr std::array kOpKinds = {
#define SG_PLACEMENT_OP(name, kind, why) OpKindInfo{#name, OpKind::kind, why},
#include "placement/op_kinds.def"
#undef SG_PLACEMENT_OP
};

constexpr std::array kPublicKinds = {
#define SG_PLACEMENT_OP(name, kind, why) PlacementOpKind{#name, #kind, why},
#include "placement/op_kinds.def"
#undef SG_PLACEMENT_OP
};

}  // namespace

const OpKindInfo* find_op_kind(std::string_view type) {
  for (const OpKindInfo& k : kOpKinds) {
    if (k.name == type) return &k;
  }
  return nullptr;
}

OpKind op_kind(std::string_view type) {
  const OpKindInfo* k = find_op_kind(type);
  return k ? k->kind : OpKind::kNotListed;
}

}  // namespace sg::placement

std::span<const sg::PlacementOpKind> sg::placement_op_kinds() { return placement::kPublicKinds; }
