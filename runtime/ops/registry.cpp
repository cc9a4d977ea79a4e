// The registry: ops.def expanded into a sorted constexpr array; lookup is a binary search.
#include "core/parallel.h"
#include "ops/kernels.h"
#include "shardgate/ops.h"

#include <algorithm>
#include <array>

namespace sg {
namespace {

constexpr std::array kOps = {
#define SG_OP(name, family, op_class) OpInfo{#name, #family, OpClass::op_class, &op_##name},
#define SG_OP_NONREPRODUCIBLE(name, family, op_class) \
  OpInfo{#name, #family, OpClass::op_class, &op_##name, /*reproducible_on_device=*/false},
#include "ops.def"
#undef SG_OP_NONREPRODUCIBLE
#undef SG_OP
};

constexpr bool is_sorted_by_name() {
  for (size_t i = 1; i < kOps.size(); ++i) {
    if (!(kOps[i - 1].name < kOps[i].name)) return false;
  }
  return true;
}
static_assert(is_sorted_by_name(), "ops.def must stay sorted by op name, without duplicates");

}  // namespace

std::span<const OpInfo> all_ops() { return kOps; }

const OpInfo* find_op(std::string_view type) {
  auto it = std::lower_bound(kOps.begin(), kOps.end(), type,
                             [](const OpInfo& info, std::string_view t) { return info.name < t; });
  if (it == kOps.end() || it->name != type) return nullptr;
  return &*it;
}

bool op_reproducible_on_device(std::string_view type) {
  const OpInfo* info = find_op(type);
  return info == nullptr || info->reproducible_on_device;
}

OpClass classify_op(std::string_view type) {
  if (type == "const" || type.rfind("constexpr_", 0) == 0) return OpClass::kCompileTime;
  return OpClass::kCompute;
}

const char* op_class_name(OpClass c) {
  return c == OpClass::kCompileTime ? "compile-time" : "compute";
}

Status run_kernel(const OpInfo& op, OpContext& ctx) {
  ParallelScope threads(ctx.threads());
  return op.kernel(ctx);
}

}  // namespace sg
