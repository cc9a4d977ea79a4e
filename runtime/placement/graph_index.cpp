#include "placement/graph_index.h"

#include <algorithm>

namespace sg::placement {

GraphIndex::GraphIndex(const Function& function) : function_(&function) {
  for (const NamedType& in : function.inputs) {
    values_[in.name] = ValueInfo{&in.type, nullptr, true};
  }
  add_block(function.block);
  function_outputs_ = function.block.outputs;
}

void GraphIndex::add_block(const Block& block) {
  for (const NamedType& in : block.inputs) values_[in.name] = ValueInfo{&in.type, nullptr, false};
  for (const Op& op : block.ops) {
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.is_reference() && !b.name.empty()) consumers_[b.name].push_back(&op);
      }
    }
    for (const NamedType& out : op.outputs) values_[out.name] = ValueInfo{&out.type, &op, false};
    for (const Block& nested : op.blocks) {
      add_block(nested);
      // A nested block's outputs are read by its parent op (cond / while_loop).
      for (const std::string& name : nested.outputs) consumers_[name].push_back(&op);
    }
  }
}

const ValueInfo* GraphIndex::find(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? nullptr : &it->second;
}

const std::vector<const Op*>& GraphIndex::consumers(std::string_view name) const {
  static const std::vector<const Op*> kNone;
  auto it = consumers_.find(std::string(name));
  return it == consumers_.end() ? kNone : it->second;
}

bool GraphIndex::is_function_output(std::string_view name) const {
  return std::find(function_outputs_.begin(), function_outputs_.end(), name) !=
         function_outputs_.end();
}

bool GraphIndex::is_compile_time_value(std::string_view name) const {
  const ValueInfo* v = find(name);
  if (!v) return true;  // unknown names are not runtime values we can reason about
  return v->producer != nullptr && v->producer->is_compile_time();
}

const ValueType* param_type(const GraphIndex& index, const Op& op, std::string_view name) {
  if (const Argument* arg = op.input(name)) {
    if (arg->bindings.empty()) return nullptr;
    const Binding& b = arg->bindings[0];
    if (!b.is_reference()) return &b.literal->type;
    const ValueInfo* v = index.find(b.name);
    return v ? v->type : nullptr;
  }
  if (const Value* attr = op.attribute(name)) return &attr->type;
  return nullptr;
}

}  // namespace sg::placement
