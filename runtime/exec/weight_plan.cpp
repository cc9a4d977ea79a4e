// plan_weight_reads (weight_plan.h): who reads each compile-time value, then one rule list.
#include "exec/weight_plan.h"

#include <unordered_map>

namespace sg {
namespace {

struct WeightConsumer {
  const Op* op;
  std::string param;  // the parameter that names the weight; "" for a nested block's read
};

using Producers = std::unordered_map<std::string, const Op*>;

// A scalar parameter of `op` given inline or by a const op (coremltools writes `axis` and
// `transpose_y` both ways), or `fallback` when absent; nullopt when it is computed (unknown
// before the run).
std::optional<double> literal_scalar(const Op& op, std::string_view name, double fallback,
                                     const Producers& producers) {
  const Argument* a = op.input(name);
  if (a == nullptr) return fallback;
  if (a->bindings.size() != 1) return std::nullopt;
  const Value* v = nullptr;
  if (a->bindings[0].is_reference()) {
    auto p = producers.find(a->bindings[0].name);
    if (p == producers.end() || !p->second->is_const()) return std::nullopt;
    v = p->second->attribute("val");
  } else {
    v = &*a->bindings[0].literal;
  }
  if (v == nullptr || v->is_blob() || !v->tensor.defined() || v->tensor.numel() != 1) return std::nullopt;
  return element_as_double(v->tensor, 0);
}

// The kernels that take a weight as a stream (OpContext::get_streamed) and the parameter
// values under which they ask for one (linear.cpp, gather.cpp).
bool streams_into(const WeightConsumer& r, const Producers& producers) {
  const Op& op = *r.op;
  if (op.type == "linear") return r.param == "weight";
  if (op.type == "matmul") {
    return r.param == "y" && literal_scalar(op, "transpose_y", 0, producers).value_or(0) != 0;
  }
  if (op.type == "gather") {
    return r.param == "x" && literal_scalar(op, "axis", 0, producers) == 0.0 &&
           literal_scalar(op, "batch_dims", 0, producers) == 0.0;
  }
  return false;
}

void collect_block_reads(const Block& block, const Op& holder,
                         std::unordered_map<std::string, std::vector<WeightConsumer>>& readers) {
  for (const Op& op : block.ops) {
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (!b.is_reference()) continue;
        auto r = readers.find(b.name);
        if (r != readers.end()) r->second.push_back({&holder, ""});
      }
    }
    for (const Block& nested : op.blocks) collect_block_reads(nested, holder, readers);
  }
  for (const std::string& o : block.outputs) {
    auto r = readers.find(o);
    if (r != readers.end()) r->second.push_back({&holder, ""});
  }
}

WeightReadDecision decide(const Function& fn, const Op& producer,
                          const std::vector<WeightConsumer>& readers, bool kept,
                          const WeightReadOptions& o, const Producers& producers) {
  WeightReadDecision d;
  d.format = find_weight_format(ParamTypes(fn, producer));
  auto decode_once = [&](std::string why) {
    d.read = WeightRead::kDecodeOnce;
    d.reason = std::move(why);
    return d;
  };
  if (d.format == nullptr) return decode_once("form not in the weight-format table");
  if (d.format->cost == WeightCost::kView) {
    d.read = WeightRead::kView;
    d.reason = "dense, read in place";
    return d;
  }
  if (!d.format->can_stream()) return decode_once("no range decoder");
  if (producer.outputs.size() != 1) return decode_once("op with several outputs");
  if (!o.stream) return decode_once("streaming off");
  if (kept) return decode_once("kept (function output or capture)");
  if (readers.size() != 1) return decode_once(fmt::format("{} reads", readers.size()));
  const WeightConsumer& r = readers[0];
  if (r.param.empty()) return decode_once(fmt::format("read inside the blocks of {}", r.op->type));
  if (r.op->is_compile_time()) return decode_once(fmt::format("read by {}", r.op->type));
  if (!streams_into(r, producers)) return decode_once(fmt::format("read by {}", r.op->type));
  d.read = WeightRead::kStream;
  d.reason = fmt::format("read once by {}", r.op->type);
  return d;
}

}  // namespace

std::map<std::string, WeightReadDecision> plan_weight_reads(const Function& fn,
                                                            const WeightReadOptions& options) {
  // Only constexpr outputs need a decision: a const is always viewed in place. Dense programs
  // (no constexpr op) are done here, so preparing a run costs them nothing.
  Producers producer;
  std::unordered_map<std::string, std::vector<WeightConsumer>> readers;
  for (const Op& op : fn.block.ops) {
    if (!op.is_constexpr()) continue;
    for (const NamedType& out : op.outputs) {
      producer.emplace(out.name, &op);
      readers.try_emplace(out.name);
    }
  }
  std::map<std::string, WeightReadDecision> plan;
  if (producer.empty()) return plan;
  for (const Op& op : fn.block.ops) {
    if (op.is_const()) continue;
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (!b.is_reference()) continue;
        auto r = readers.find(b.name);
        if (r != readers.end()) r->second.push_back({&op, key});
      }
    }
    for (const Block& nested : op.blocks) collect_block_reads(nested, op, readers);
  }
  for (const Op& op : fn.block.ops) {
    if (op.is_const()) producer.emplace(op.outputs.empty() ? "" : op.outputs[0].name, &op);
  }
  for (const auto& [name, rs] : readers) {
    if (rs.empty()) continue;
    const Op& p = *producer.at(name);
    plan.emplace(name, decide(fn, p, rs, options.kept.count(name) > 0, options, producer));
  }
  return plan;
}

}  // namespace sg
