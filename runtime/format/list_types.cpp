// mark_dynamic_lists(): see list_types.h.
#include "format/list_types.h"

#include <functional>
#include <map>
#include <set>
#include <string>

namespace sg {
namespace {

bool is_list(const ValueType& t) { return t.kind == ValueType::Kind::kList; }

using Consts = std::map<std::string, const Value*, std::less<>>;

// make_list's dynamic_length: an inline literal, a const op's value (how coremltools writes
// it) or an attribute; false when absent (the op's default).
bool declares_dynamic(const Op& op, const Consts& consts) {
  const Value* v = op.attribute("dynamic_length");
  if (const Argument* a = op.input("dynamic_length"); a != nullptr && a->bindings.size() == 1) {
    const Binding& b = a->bindings[0];
    if (!b.is_reference()) {
      v = &*b.literal;
    } else if (auto c = consts.find(b.name); c != consts.end()) {
      v = c->second;
    }
  }
  if (v == nullptr || v->is_blob() || v->tensor.numel() != 1 || v->tensor.dtype() != DType::kBool) {
    return false;
  }
  return v->tensor.data<uint8_t>()[0] != 0;
}

class Marker {
 public:
  // Returns true when anything changed (the caller repeats until nothing does: a loop body can
  // hand a dynamic list back to its own next iteration).
  bool block(Block& b) {
    bool changed = false;
    for (Op& op : b.ops) changed |= this->op(op);
    return changed;
  }

 private:
  bool mark(NamedType& v) {
    if (!is_list(v.type)) return false;
    const bool added = dynamic_.insert(v.name).second;
    const bool retyped = v.type.list_length != kUnknownDim;
    v.type.list_length = kUnknownDim;
    return added || retyped;
  }

  bool reads_dynamic(const Argument& a) const {
    for (const Binding& b : a.bindings) {
      if (b.is_reference() && dynamic_.count(b.name)) return true;
    }
    return false;
  }

  bool op(Op& op) {
    bool changed = false;
    if (op.is_const() && op.outputs.size() == 1) {
      if (const Value* v = op.attribute("val")) consts_.emplace(op.outputs[0].name, v);
      return false;
    }
    if (op.type == "make_list") {
      if (declares_dynamic(op, consts_) && !op.outputs.empty()) changed |= mark(op.outputs[0]);
      return changed;
    }
    if (op.type == "while_loop") {
      // loop_vars[i] is block input i of both blocks and output i of the op; body output i
      // is the next iteration's loop variable i.
      // One walk per pass (a second walk here would double per nesting level); a body output
      // found dynamic reaches the block inputs in the caller's next pass.
      const Argument* vars = op.input("loop_vars");
      for (size_t i = 0; vars != nullptr && i < vars->bindings.size(); ++i) {
        const Binding& b = vars->bindings[i];
        bool dyn = b.is_reference() && dynamic_.count(b.name);
        if (op.blocks.size() == 2 && i < op.blocks[1].outputs.size()) {
          dyn = dyn || dynamic_.count(op.blocks[1].outputs[i]);
        }
        if (!dyn) continue;
        for (Block& blk : op.blocks) {
          if (i < blk.inputs.size()) changed |= mark(blk.inputs[i]);
        }
        if (i < op.outputs.size()) changed |= mark(op.outputs[i]);
      }
      for (Block& blk : op.blocks) changed |= block(blk);
      return changed;
    }
    for (Block& blk : op.blocks) changed |= block(blk);
    bool passes_on = false;
    for (const auto& [key, arg] : op.inputs) passes_on = passes_on || reads_dynamic(arg);
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      // cond: output i is branch output i of either block.
      for (const Block& blk : op.blocks) {
        passes_on = passes_on || (i < blk.outputs.size() && dynamic_.count(blk.outputs[i]));
      }
    }
    if (passes_on) {
      for (NamedType& out : op.outputs) changed |= mark(out);
    }
    return changed;
  }

  std::set<std::string> dynamic_;
  Consts consts_;  // const values seen so far (a program's ops are in dependency order)
};

}  // namespace

void mark_dynamic_lists(Program& program) {
  for (Function& fn : program.functions) {
    Marker m;
    // Each pass is one walk in program order; a pass that changes anything marks a list value
    // not marked before, so the passes end (after at most one per list value, and in practice
    // two: loop bodies hand lists back to the next iteration).
    while (m.block(fn.block)) {
    }
  }
}

}  // namespace sg
