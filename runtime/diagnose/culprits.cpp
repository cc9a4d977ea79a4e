// find_culprits() (culprits.h): align, run both shards capturing every op output, compare.
#include "shardgate/culprits.h"

#include "shardgate/executor.h"
#include "shardgate/metrics.h"
#include "shardgate/weight_diagnostics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

namespace sg {
namespace {

// A metric with no number here (shapes differ, an integer output's norms, non-finite values that
// disagree): NaN in the report; a NaN cosine fails the output.
constexpr double kNoMetric = std::numeric_limits<double>::quiet_NaN();

bool is_float(DType t) { return t == DType::kF16 || t == DType::kF32; }

// Runtime ops of a function's own block (nested control-flow bodies are compared as the
// outputs of their cond / while_loop).
std::vector<const Op*> runtime_ops(const Function& fn) {
  std::vector<const Op*> out;
  for (const Op& op : fn.block.ops) {
    if (!op.is_compile_time() && !op.outputs.empty()) out.push_back(&op);
  }
  return out;
}

// Whether two declared types can be the same value's: where both are tensors of known rank,
// the same rank and the same size in every dimension both know.
bool shapes_agree(const ValueType& x, const ValueType& y) {
  if (!x.is_tensor() || !y.is_tensor() || !x.rank_known || !y.rank_known) return true;
  if (x.shape.size() != y.shape.size()) return false;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (x.shape[d] != kUnknownDim && y.shape[d] != kUnknownDim && x.shape[d] != y.shape[d]) {
      return false;
    }
  }
  return true;
}

// The declared type of every value a function's block names: its inputs and its ops' outputs.
using TypeOf = std::map<std::string, const ValueType*>;
TypeOf types_of(const Function& fn) {
  TypeOf out;
  for (const NamedType& in : fn.inputs) out.emplace(in.name, &in.type);
  for (const Op& op : fn.block.ops) {
    for (const NamedType& o : op.outputs) out.emplace(o.name, &o.type);
  }
  return out;
}

// Whether two ops of one type can be one op of two builds: the same shapes for every value
// both read at the same place (weights included) and for every output. A quantized build
// changes how weights are stored, never a shape (a weight's constexpr has the dense const's),
// so an op of other shapes in the baseline is another op: an attention shard given as the
// baseline of an MoE pack (both map `hidden` to `hidden_out`) paired the pack's `linear`s with
// the attention's by type and named three of them sources, "cosine -", from outputs of other
// shapes.
bool same_shapes(const Op& a, const TypeOf& ta, const Op& b, const TypeOf& tb) {
  if (a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (!shapes_agree(a.outputs[i].type, b.outputs[i].type)) return false;
  }
  for (const auto& [param, arg] : a.inputs) {
    const Argument* other = b.input(param);
    if (other == nullptr) continue;
    const auto& bb = other->bindings;
    for (size_t k = 0; k < arg.bindings.size() && k < bb.size(); ++k) {
      if (!arg.bindings[k].is_reference() || !bb[k].is_reference()) continue;
      auto x = ta.find(arg.bindings[k].name);
      auto y = tb.find(bb[k].name);
      if (x != ta.end() && y != tb.end() && !shapes_agree(*x->second, *y->second)) return false;
    }
  }
  return true;
}

// Candidate op -> baseline op: by first output name (and type and shapes), else the k-th
// runtime op of the same type among the ops of each function that no name paired, when its
// shapes agree. The name-paired ops are left out of the k-th count on both sides: counted in,
// an op the candidate inserts (a scale `mul`) took the place of the baseline's first `mul`
// although that one was paired by name already, so two candidate ops were compared with one
// baseline op, the inserted one with an unrelated tensor.
std::map<const Op*, std::pair<const Op*, const char*>> align(const Function& cand,
                                                            const Function& base) {
  const TypeOf tc = types_of(cand), tb = types_of(base);
  std::map<std::string, const Op*> base_by_name;
  for (const Op* op : runtime_ops(base)) base_by_name.emplace(op->outputs[0].name, op);
  std::map<const Op*, std::pair<const Op*, const char*>> out;
  std::set<const Op*> named;  // baseline ops paired by name
  for (const Op* op : runtime_ops(cand)) {
    auto n = base_by_name.find(op->outputs[0].name);
    if (n != base_by_name.end() && n->second->type == op->type &&
        same_shapes(*op, tc, *n->second, tb)) {
      out[op] = {n->second, "name"};
      named.insert(n->second);
    }
  }
  std::map<std::string, std::vector<const Op*>> base_by_type;
  for (const Op* op : runtime_ops(base)) {
    if (!named.count(op)) base_by_type[op->type].push_back(op);
  }
  std::map<std::string, size_t> seen_type;
  for (const Op* op : runtime_ops(cand)) {
    if (out.count(op)) continue;
    const size_t k = seen_type[op->type]++;
    auto t = base_by_type.find(op->type);
    if (t != base_by_type.end() && k < t->second.size() &&
        same_shapes(*op, tc, *t->second[k], tb)) {
      out[op] = {t->second[k], "structure"};
    }
  }
  return out;
}

// Value name -> the op of `fn`'s block that makes it.
std::map<std::string, const Op*> producers_of(const Function& fn) {
  std::map<std::string, const Op*> out;
  for (const Op& op : fn.block.ops) {
    for (const NamedType& o : op.outputs) out.emplace(o.name, &op);
  }
  return out;
}

// The compressed weights `op` reads: values made by constexpr ops (their output names).
std::set<std::string> compressed_weights_read(const Op& op,
                                              const std::map<std::string, const Op*>& producer) {
  std::set<std::string> weights;
  for (const auto& [param, arg] : op.inputs) {
    for (const Binding& b : arg.bindings) {
      if (!b.is_reference()) continue;
      auto p = producer.find(b.name);
      if (p != producer.end() && p->second->is_constexpr()) weights.insert(b.name);
    }
  }
  return weights;
}

// Every candidate op that reads a compressed weight is what the search is for. When none has a
// baseline counterpart, the baseline is another model (exit 2); when some have none, each is
// named in a note, since its error is not judged.
Status check_weight_readers_aligned(
    const CulpritResult& r, const Function& cand,
    const std::map<const Op*, std::pair<const Op*, const char*>>& aligned,
    const std::map<std::string, const Op*>& producer, std::vector<std::string>& notes) {
  std::vector<std::string> readers, unaligned;
  for (const Op* op : runtime_ops(cand)) {
    const std::set<std::string> weights = compressed_weights_read(*op, producer);
    if (weights.empty()) continue;
    const std::string name = fmt::format("#{} {} '{}'", op->index, op->type, op->outputs[0].name);
    readers.push_back(name);
    if (!aligned.count(op)) {
      unaligned.push_back(name);
      notes.push_back(fmt::format("{} reads the compressed weight(s) {} and has no baseline op of "
                                  "its type and shapes: its error is not judged",
                                  name, fmt::join(weights, ", ")));
    }
  }
  SG_CHECK(readers.empty() || unaligned.size() < readers.size(), ErrorCode::kUsage,
           "{}: none of the {} op(s) reading its compressed weights ({}) has an op of the same "
           "type and shapes in the baseline {}: not the FP16 build of this shard?",
           r.candidate, readers.size(), fmt::join(readers, ", "), r.baseline);
  return Status::ok();
}

// A value a run produced: a function output or a captured intermediate (nullptr when neither).
const Tensor* produced(const RunResult& run, const std::string& name) {
  for (const auto* values : {&run.outputs, &run.captured}) {
    auto it = values->find(name);
    if (it != values->end()) return &it->second;
  }
  return nullptr;
}

// The tensor a run holds for `name`: an op output it produced or a function input.
const Tensor* value_of(const RunResult& run, const std::map<std::string, Tensor>& inputs,
                       const std::string& name) {
  if (const Tensor* t = produced(run, name)) return t;
  auto it = inputs.find(name);
  return it == inputs.end() ? nullptr : &it->second;
}

// The binding of `op` at parameter `param`, position `k` (nullptr when it has none).
const Binding* binding_at(const Op& op, const std::string& param, size_t k) {
  for (const auto& [p, arg] : op.inputs) {
    if (p == param) return k < arg.bindings.size() ? &arg.bindings[k] : nullptr;
  }
  return nullptr;
}

// A source op's compressed weights against what the baseline op reads in their place. At a
// relative error of 1 or more a weight is no closer to the baseline's than zeros: not a coarse
// compression of it but another weight, so the error "entering" there is the baseline's (a
// layer-1 FP16 shard given as the baseline of a layer-0 shard: names and shapes agree, only
// the values tell, 1.40-1.44 on every weight, where even 1-bit codes of Gaussian weights stay
// near 0.6). Each such weight is named in a note.
Status note_unrelated_weights(const Shard& candidate, const Function& cf, const Op& op,
                              const Shard& baseline, const Function& bf, const Op& base_op,
                              const std::map<std::string, const Op*>& base_producer,
                              const std::set<std::string>& weights,
                              std::vector<std::string>& notes) {
  for (const auto& [param, arg] : op.inputs) {
    for (size_t k = 0; k < arg.bindings.size(); ++k) {
      const Binding& b = arg.bindings[k];
      if (!b.is_reference() || !weights.count(b.name)) continue;
      const Binding* bb = binding_at(base_op, param, k);
      if (bb == nullptr || !bb->is_reference()) continue;
      auto made = base_producer.find(bb->name);
      if (made == base_producer.end() || !made->second->is_compile_time()) continue;
      SG_ASSIGN_OR_RETURN(WeightError e, weight_error(candidate, cf, b.name, baseline, bf, bb->name));
      if (e.rel_error >= 1.0) {
        notes.push_back(fmt::format(
            "#{} {} '{}': its weight {} is no closer to the baseline's '{}' than zeros (relative "
            "error {:.3f}): is the baseline this shard's FP16 build? (another layer or model "
            "given as the baseline)",
            op.index, op.type, op.outputs[0].name, b.name, bb->name, e.rel_error));
      }
    }
  }
  return Status::ok();
}

void compare(const Tensor& c, const Tensor& b, OpComparison& r) {
  r.dtype = std::string(dtype_name(c.dtype()));
  r.shape = c.shape();
  if (c.shape() != b.shape()) {
    r.cosine = r.norm_ratio = r.rel_l2 = r.snr_db = kNoMetric;
    return;
  }
  auto cv = to_double_vector(c);
  auto bv = to_double_vector(b);
  if (!cv.is_ok() || !bv.is_ok()) {
    r.cosine = r.norm_ratio = r.rel_l2 = r.snr_db = kNoMetric;
    return;
  }
  if (!is_float(c.dtype())) {
    int64_t equal = 0;
    for (size_t i = 0; i < cv->size(); ++i) equal += (*cv)[i] == (*bv)[i];
    r.cosine = cv->empty() ? 1.0 : static_cast<double>(equal) / static_cast<double>(cv->size());
    r.norm_ratio = r.rel_l2 = r.snr_db = kNoMetric;
    return;
  }
  // Non-finite elements: NaN or +-Inf in one output and not the same in the other is error this
  // op produced (an fp16 overflow), so the output fails (cosine NaN). The sums would be NaN
  // anyway, which the line below used to read as "both all zeros" and pass. The same non-finite
  // value at the same place in both (a -inf attention mask) agrees and is left out of the sums.
  if (!std::all_of(cv->begin(), cv->end(), [](double v) { return std::isfinite(v); }) ||
      !std::all_of(bv->begin(), bv->end(), [](double v) { return std::isfinite(v); })) {
    std::vector<double> cf, bf;
    for (size_t i = 0; i < cv->size(); ++i) {
      const double x = (*cv)[i], y = (*bv)[i];
      if (std::isfinite(x) && std::isfinite(y)) {
        cf.push_back(x);
        bf.push_back(y);
      } else if (!(x == y || (std::isnan(x) && std::isnan(y)))) {
        r.cosine = r.norm_ratio = r.rel_l2 = r.snr_db = kNoMetric;
        return;
      }
    }
    *cv = std::move(cf);
    *bv = std::move(bf);
  }
  // Whole-output cosine: reshapes and transposes move positions between rows, so a per-row
  // minimum would make pure data movement look like it adds error.
  const std::span<const double> cs(*cv), bs(*bv);
  const double cos = cosine_similarity(cs, bs);
  r.cosine = std::isnan(cos) ? 1.0 : cos;  // both all zeros (finite): identical
  r.norm_ratio = norm_ratio(cs, bs);
  r.rel_l2 = relative_l2(cs, bs);
  r.snr_db = snr_db(cs, bs);
}

bool is_integer(const OpComparison& o) { return o.dtype != "fp16" && o.dtype != "fp32"; }

// Below --min-cosine fails; an integer output fails when any element differs; NaN (non-finite
// values, shapes that differ) fails.
void judge(OpComparison& o, double min_cosine) {
  o.fails = std::isnan(o.cosine) || (is_integer(o) ? o.cosine < 1.0 : o.cosine < min_cosine);
}

// The cosine an op reading this output sees: integers 1 (every element equal) or 0.
double downstream_cosine(const OpComparison& o) {
  if (std::isnan(o.cosine) || !is_integer(o)) return o.cosine;
  return o.cosine < 1.0 ? 0.0 : 1.0;
}

// Which of two outputs of one op its row shows: a failing one, then a NaN, then the lowest.
bool worse_than(const OpComparison& a, const OpComparison& b) {
  if (a.fails != b.fails) return a.fails;
  if (std::isnan(a.cosine) != std::isnan(b.cosine)) return std::isnan(a.cosine);
  return downstream_cosine(a) < downstream_cosine(b);
}

}  // namespace

std::vector<const OpComparison*> CulpritResult::sources() const {
  std::vector<const OpComparison*> out;
  for (const OpComparison& o : ops) {
    if (o.source) out.push_back(&o);
  }
  return out;
}

std::vector<const OpComparison*> CulpritResult::top_added(size_t n) const {
  std::vector<const OpComparison*> out;
  for (const OpComparison& o : ops) {
    // Below 1e-9 is the rounding of the cosines themselves (identical outputs give 1 - 2e-16).
    if (o.added_error > 1e-9) out.push_back(&o);
  }
  std::stable_sort(out.begin(), out.end(), [](const OpComparison* a, const OpComparison* b) {
    return a->added_error > b->added_error;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

Result<CulpritResult> find_culprits(const std::shared_ptr<const Shard>& candidate,
                                    const std::shared_ptr<const Shard>& baseline,
                                    const CulpritOptions& options) {
  CulpritResult r;
  r.candidate = candidate->path();
  r.baseline = baseline->path();
  r.function = options.function;
  r.min_cosine = options.min_cosine;
  SG_ASSIGN_OR_RETURN(r.candidate_fingerprint, candidate->fingerprint());
  SG_ASSIGN_OR_RETURN(r.baseline_fingerprint, baseline->fingerprint());
  const Function* cf = candidate->program().function(options.function);
  const Function* bf = baseline->program().function(options.function);
  SG_CHECK(cf != nullptr, ErrorCode::kUsage, "{}: no function '{}'", r.candidate, options.function);
  SG_CHECK(bf != nullptr, ErrorCode::kUsage, "{}: no function '{}'", r.baseline, options.function);
  // The FP16 build of a shard has its outputs. Another model's (an attention shard given for an
  // MoE pack) aligned a few ops by type and named sources "cosine -" from outputs of other
  // shapes, exit 0; `weights` refuses such a baseline too.
  std::vector<std::string> couts = cf->block.outputs, bouts = bf->block.outputs;
  std::sort(couts.begin(), couts.end());
  std::sort(bouts.begin(), bouts.end());
  SG_CHECK(couts == bouts, ErrorCode::kUsage,
           "{}: the baseline {} function '{}' has the outputs {}, the shard {}: not the FP16 build "
           "of this shard?",
           r.candidate, r.baseline, options.function, fmt::join(bf->block.outputs, ", "),
           fmt::join(cf->block.outputs, ", "));
  const auto aligned = align(*cf, *bf);
  const std::map<std::string, const Op*> producer = producers_of(*cf);
  const std::map<std::string, const Op*> base_producer = producers_of(*bf);
  SG_TRY(check_weight_readers_aligned(r, *cf, aligned, producer, r.notes));

  RunOptions run;
  run.precision = options.precision;
  run.threads = options.threads;
  run.capture_all = true;
  Executor cexec(candidate), bexec(baseline);
  SG_ASSIGN_OR_RETURN(RunResult cres, cexec.run(options.function, options.inputs, run));
  SG_ASSIGN_OR_RETURN(RunResult bres, bexec.run(options.function, options.inputs, run));

  std::map<std::string, double> cosine_of;  // candidate value -> its comparison's cosine
  std::map<std::string, bool> fails_of;
  for (const Op* op : runtime_ops(*cf)) {
    auto a = aligned.find(op);
    if (a == aligned.end()) {
      r.unmatched.push_back(fmt::format("#{} {} '{}'", op->index, op->type, op->outputs[0].name));
      continue;
    }
    const Op& base_op = *a->second.first;
    // Every output against the baseline op's output at the same position, each recorded for the
    // ops reading it: a topk's indices can flip while its values stay close, and only its values
    // (the first output) used to be compared, so the flip passed as a function input and the op
    // reading the indices was named the source. The row shows the worst output.
    std::optional<OpComparison> worst;
    for (size_t j = 0; j < op->outputs.size() && j < base_op.outputs.size(); ++j) {
      OpComparison o;
      o.op_index = op->index;
      o.op_type = op->type;
      o.output = op->outputs[j].name;
      o.baseline_output = base_op.outputs[j].name;
      o.matched_by = a->second.second;
      const Tensor* cv = produced(cres, o.output);
      const Tensor* bv = produced(bres, o.baseline_output);
      if (cv == nullptr || bv == nullptr) continue;
      compare(*cv, *bv, o);
      judge(o, options.min_cosine);
      cosine_of[o.output] = downstream_cosine(o);
      fails_of[o.output] = o.fails;
      if (!worst || worse_than(o, *worst)) worst = std::move(o);
    }
    if (!worst) {
      r.notes.push_back(fmt::format("#{} {} '{}': output not captured (not a tensor)", op->index,
                                    op->type, op->outputs[0].name));
      continue;
    }
    OpComparison c = std::move(*worst);
    // The runtime values it reads; compile-time ones are weights (listed when compressed).
    const std::set<std::string> weights = compressed_weights_read(*op, producer);
    bool inputs_pass = true;
    for (const auto& [param, arg] : op->inputs) {
      for (size_t bi = 0; bi < arg.bindings.size(); ++bi) {
        const Binding& b = arg.bindings[bi];
        if (!b.is_reference()) continue;
        auto p = producer.find(b.name);
        if (p != producer.end() && p->second->is_compile_time()) continue;
        double cos = 1.0;
        bool fails = false;
        if (auto k = cosine_of.find(b.name); k != cosine_of.end()) {
          cos = k->second;
          fails = fails_of[b.name];
        } else if (cf->input(b.name) != nullptr) {
          continue;  // a function input: the same tensor for both
        } else {
          // Made by an op with no baseline counterpart (an inserted clip or dequantize): it used
          // to be taken for a function input, identical, so this op was named a source "with
          // every input passing". Compare it with what the baseline op reads in its place.
          const Binding* bb = binding_at(base_op, param, bi);
          const Tensor* cv = value_of(cres, options.inputs, b.name);
          const Tensor* bv = bb != nullptr && bb->is_reference() ? value_of(bres, options.inputs, bb->name) : nullptr;
          if (cv == nullptr || bv == nullptr) {
            // Nothing to compare it with: no evidence that it passes.
            inputs_pass = false;
            r.notes.push_back(fmt::format("#{} {} '{}': input '{}' has no baseline value to compare "
                                          "with, so the op is not judged a source",
                                          op->index, op->type, c.output, b.name));
            continue;
          }
          OpComparison in;
          compare(*cv, *bv, in);
          judge(in, options.min_cosine);
          cos = downstream_cosine(in);
          fails = in.fails;
        }
        // A non-finite input (cosine NaN) stays NaN: std::min would drop it and print 1.
        c.input_cosine = std::isnan(cos) ? cos : std::min(c.input_cosine, cos);
        inputs_pass = inputs_pass && !fails;
      }
    }
    c.compressed_weights.assign(weights.begin(), weights.end());
    c.source = c.fails && inputs_pass;
    if (c.source && !weights.empty()) {
      SG_TRY(note_unrelated_weights(*candidate, *cf, *op, *baseline, *bf, base_op, base_producer,
                                    weights, r.notes));
    }
    c.added_error = std::isnan(c.cosine) || std::isnan(c.input_cosine) || is_integer(c)
                        ? 0.0
                        : (1 - c.cosine) - (1 - c.input_cosine);
    r.ops.push_back(std::move(c));
  }
  return r;
}

}  // namespace sg
