// nonreproducible_values(): which values of a function a device cannot reproduce (ops.h). The
// fidelity gates exclude checks on them (README "Metrics": random ops), so this must never miss
// a dependency: an unknown op is reproducible (it fails to run anyway), everything else is
// followed through its references, nested blocks included.
#include "shardgate/ops.h"

#include <fmt/format.h>

namespace sg {
namespace {

using Taint = std::map<std::string, std::string>;

std::string describe(const Op& op) {
  const std::string name = op.name();
  return name.empty() ? fmt::format("{} op #{}", op.type, op.index)
                      : fmt::format("{} op #{} '{}'", op.type, op.index, name);
}

// The first tainted value `op` reads (its own references only), or nullptr.
const std::string* tainted_reference(const Op& op, const Taint& taint) {
  for (const auto& [key, arg] : op.inputs) {
    for (const Binding& b : arg.bindings) {
      if (!b.is_reference()) continue;
      if (auto it = taint.find(b.name); it != taint.end()) return &it->second;
    }
  }
  return nullptr;
}

// Walks `block` in order, adding the outputs of every tainted op to `taint`. Returns the first
// reason found inside the block ("" when nothing in it is tainted): a control-flow op uses it
// to taint its own outputs.
std::string walk(const Block& block, Taint& taint) {
  std::string first;
  for (const Op& op : block.ops) {
    std::string why;
    if (!op_reproducible_on_device(op.type)) {
      why = describe(op);
    } else if (const std::string* in = tainted_reference(op, taint)) {
      why = *in;
    }
    // Nested blocks see the outer values; what they make stays theirs, but any taint inside
    // (their own random op, or an outer tainted value they read) reaches every output.
    for (const Block& nested : op.blocks) {
      Taint inner = taint;
      std::string w = walk(nested, inner);
      if (why.empty() && !w.empty()) why = std::move(w);
    }
    if (why.empty()) continue;
    for (const NamedType& out : op.outputs) taint.emplace(out.name, why);
    if (first.empty()) first = why;
  }
  return first;
}

}  // namespace

std::map<std::string, std::string> nonreproducible_values(
    const Function& fn, const std::map<std::string, std::string>& tainted_inputs) {
  Taint taint;
  for (const auto& [name, why] : tainted_inputs) {
    if (fn.input(name) != nullptr) taint.emplace(name, why);
  }
  walk(fn.block, taint);
  return taint;
}

}  // namespace sg
