#include "exec/shard_op_context.h"

namespace sg {

bool ShardOpContext::has(std::string_view name) const {
  return op_.input(name) != nullptr || op_.attribute(name) != nullptr;
}

Result<Tensor> ShardOpContext::binding_value(const Binding& b, std::string_view name) {
  Result<Tensor> r = b.is_reference() ? reference_value(b.name) : shard_.resolve(*b.literal);
  if (!r.is_ok()) {
    return error(r.status().code(), fmt::format("parameter '{}': {}", name, r.status().message()));
  }
  return r;
}

Result<Tensor> ShardOpContext::get(std::string_view name) {
  if (const Argument* arg = op_.input(name)) {
    if (arg->bindings.size() != 1) {
      return error(ErrorCode::kInvalidProgram,
                   fmt::format("parameter '{}' has {} bindings, expected 1", name,
                               arg->bindings.size()));
    }
    return binding_value(arg->bindings[0], name);
  }
  if (const Value* v = op_.attribute(name)) {
    auto r = shard_.resolve(*v);
    if (!r.is_ok()) {
      return error(r.status().code(), fmt::format("parameter '{}': {}", name, r.status().message()));
    }
    return r;
  }
  return error(ErrorCode::kMissingParameter, fmt::format("missing parameter '{}'", name));
}

Result<std::vector<Tensor>> ShardOpContext::get_all(std::string_view name) {
  std::vector<Tensor> out;
  if (const Argument* arg = op_.input(name)) {
    for (const Binding& b : arg->bindings) {
      SG_ASSIGN_OR_RETURN(Tensor t, binding_value(b, name));
      out.push_back(std::move(t));
    }
    return out;
  }
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  out.push_back(std::move(t));
  return out;
}

}  // namespace sg
