// Precision advice: the candidates and their ranking, and the greedy-then-prune search
// (advise.h). Running the chain is the caller's (the evaluator); nothing here executes.
#include "shardgate/advise.h"

#include "shardgate/dtype.h"
#include "shardgate/weight_diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace sg {
namespace {

const Op* producer_of(const Function& fn, const std::string& value) {
  for (const Op& op : fn.block.ops) {
    for (const NamedType& o : op.outputs) {
      if (o.name == value) return &op;
    }
  }
  return nullptr;
}

// The bytes a compile-time value is decoded from, as the file stores them: every const behind
// its constexpr chain (codes, scales, offsets, tables), packed sub-byte types included.
int64_t stored_bytes(const Function& fn, const std::string& value, int depth = 0) {
  const Op* op = producer_of(fn, value);
  if (op == nullptr || depth > 64) return 0;
  if (op->is_const()) {
    int64_t n = 0;
    for (const NamedType& o : op->outputs) {
      if (o.type.is_tensor() && o.type.rank_known) {
        n += static_cast<int64_t>(dtype_storage_bytes(o.type.dtype, static_cast<size_t>(numel(o.type.shape))));
      }
    }
    return n;
  }
  int64_t n = 0;
  for (const auto& [key, arg] : op->inputs) {
    for (const Binding& b : arg.bindings) {
      if (b.is_reference()) {
        n += stored_bytes(fn, b.name, depth + 1);
      } else if (b.literal->type.is_tensor() && b.literal->type.rank_known) {
        // Codes, scales and offsets are usually literals of the constexpr op itself.
        n += static_cast<int64_t>(dtype_storage_bytes(b.literal->type.dtype,
                                                      static_cast<size_t>(numel(b.literal->type.shape))));
      }
    }
  }
  return n;
}

// The runtime ops of `fn` reading `value`: "#38 linear 'experts_gate'".
std::vector<std::string> readers_of(const Function& fn, const std::string& value) {
  std::vector<std::string> out;
  for (const Op& op : fn.block.ops) {
    if (op.is_compile_time()) continue;
    bool reads = false;
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) reads = reads || (b.is_reference() && b.name == value);
    }
    if (reads) {
      out.push_back(fmt::format("#{} {} '{}'", op.index, op.type,
                                op.outputs.empty() ? std::string() : op.outputs[0].name));
    }
  }
  return out;
}

// A source op's error, 1 - cosine; a non-finite output (cosine NaN) is the worst there is, and a
// NaN in the ranking's comparisons would leave the order undefined.
double culprit_error(const OpComparison& o) {
  return std::isnan(o.cosine) ? std::numeric_limits<double>::infinity() : 1.0 - o.cosine;
}

}  // namespace

Result<std::vector<AdviceCandidate>> advice_candidates(const std::vector<AdviceShard>& shards,
                                                       const std::vector<CulpritResult>* culprits,
                                                       std::vector<std::string>& notes) {
  // Source ops by (candidate shard, weight value): the worst one reading it.
  std::map<std::pair<std::string, std::string>, const OpComparison*> source_of;
  if (culprits != nullptr) {
    for (const CulpritResult& r : *culprits) {
      for (const OpComparison* o : r.sources()) {
        for (const std::string& w : o->compressed_weights) {
          auto& slot = source_of[{r.candidate, w}];
          if (slot == nullptr || culprit_error(*o) > culprit_error(*slot)) slot = o;
        }
      }
    }
  }
  std::vector<AdviceCandidate> out;
  std::set<std::string> seen_shards;
  for (const AdviceShard& s : shards) {
    // A shard run by several steps is one set of weights: its first step names it.
    if (!seen_shards.insert(s.candidate->path()).second) continue;
    SG_ASSIGN_OR_RETURN(WeightDiagnosticsResult diag, diagnose_weights(*s.candidate, s.baseline.get()));
    for (const WeightDiagnostic& w : diag.weights) {
      if (w.function != s.function) continue;
      if (!w.has_baseline) {
        notes.push_back(fmt::format("{}: {} ({}) has no baseline weight ({}): not a candidate",
                                    s.step, w.name, w.key, w.baseline_name));
        continue;
      }
      const Function* fn = s.candidate->program().function(w.function);
      SG_CHECK(fn != nullptr, ErrorCode::kInternal, "{}: no function '{}'", s.candidate->path(), w.function);
      AdviceCandidate c;
      c.step = s.step;
      c.shard = s.candidate->path();
      c.baseline = s.baseline->path();
      c.function = w.function;
      c.value = w.name;
      c.baseline_value = w.baseline_name;
      c.key = w.key;
      c.form = w.form;
      c.readers = readers_of(*fn, w.name);
      c.elements = w.elements;
      c.fp16_bytes = 2 * w.elements;
      c.compressed_bytes = stored_bytes(*fn, w.name);
      auto src = source_of.find({c.shard, w.name});
      if (src != source_of.end()) {
        const OpComparison& o = *src->second;
        c.evidence = "culprit";
        c.sensitivity = culprit_error(o);
        c.evidence_text = fmt::format("culprit source op #{} {} '{}': output cosine {:.6f} "
                                      "with every input at >= {:.6f}",
                                      o.op_index, o.op_type, o.output, o.cosine, o.input_cosine);
      } else {
        c.evidence = "weights";
        c.sensitivity = w.rel_error;
        c.evidence_text = fmt::format("weight diagnostics: relative error {:.4f} against the baseline "
                                      "(estimated {:.4f}){}",
                                      w.rel_error, w.est_rel_error,
                                      w.flags.empty() ? "" : ", flagged " + w.flags.front().id);
      }
      out.push_back(std::move(c));
    }
  }
  // Culprit evidence first (measured on the chain's own inputs), then the static error; ties
  // keep chain order, so the ranking is deterministic.
  std::stable_sort(out.begin(), out.end(), [](const AdviceCandidate& a, const AdviceCandidate& b) {
    const bool ac = a.evidence == "culprit", bc = b.evidence == "culprit";
    if (ac != bc) return ac;
    return a.sensitivity > b.sensitivity;
  });
  return out;
}

Result<AdviceSearch> search_advice(size_t candidates, int64_t max_runs, int64_t runs_used,
                                   const AdviceEvaluator& evaluate) {
  AdviceSearch s;
  s.runs = runs_used;
  std::vector<size_t> set;
  auto trial = [&](const char* action, size_t c, const std::vector<size_t>& trial_set) -> Result<bool> {
    SG_ASSIGN_OR_RETURN(AdviceVerdict v, evaluate(trial_set));
    ++s.runs;
    AdviceTrial t;
    t.run = s.runs;
    t.action = action;
    t.candidate = c;
    t.set_size = trial_set.size();
    t.passes = v.passes;
    t.summary = v.summary;
    s.trials.push_back(std::move(t));
    return v.passes;
  };
  // Greedy: grow the set in rank order until the gate passes.
  for (size_t c = 0; c < candidates && !s.found; ++c) {
    if (s.runs >= max_runs) {
      s.stopped = fmt::format("stopped at --max-runs {} after adding {} of {} candidates, the gate "
                              "still failing", max_runs, set.size(), candidates);
      return s;
    }
    set.push_back(c);
    SG_ASSIGN_OR_RETURN(bool passes, trial("add", c, set));
    s.trials.back().kept = true;
    s.found = passes;
  }
  if (!s.found) {
    s.stopped = fmt::format("every one of the {} candidates kept fp16 and the gate still fails: no "
                            "set of these weights is enough", candidates);
    return s;
  }
  const size_t grown = set.size();
  // Prune: drop each chosen weight once, in rank order, when the gate passes without it.
  std::vector<size_t> order = set;
  for (size_t c : order) {
    if (set.size() == 1) break;  // the empty set is the failing chain itself
    if (s.runs >= max_runs) {
      s.chosen = set;
      s.stopped = fmt::format("pruning stopped at --max-runs {}: {} weight(s) found, not every one "
                              "tried for removal", max_runs, set.size());
      return s;
    }
    std::vector<size_t> without;
    for (size_t k : set) {
      if (k != c) without.push_back(k);
    }
    SG_ASSIGN_OR_RETURN(bool passes, trial("drop", c, without));
    if (passes) {
      set = std::move(without);
      s.trials.back().kept = true;
    }
  }
  s.chosen = set;
  s.stopped = fmt::format("passed after adding {} weight(s) in rank order; pruning dropped {}, "
                          "{} left", grown, grown - set.size(), set.size());
  return s;
}

std::vector<AdviceCheck> advice_checks(const FidelityRun& run_before, const GateEvaluation& before,
                                       const FidelityRun* run_after, const GateEvaluation* after) {
  std::vector<AdviceCheck> out;
  auto fill = [](AdviceMetric& m, const MetricVerdict& v, bool is_after) {
    (is_after ? m.after : m.before) = v.value;
    (is_after ? m.after_upper : m.before_upper) = v.value_upper;
    (is_after ? m.verdict_after : m.verdict_before) = verdict_name(v.verdict);
    (is_after ? m.worst_position_after : m.worst_position_before) = v.worst_position;
  };
  for (size_t i = 0; i < run_before.checks.size() && i < before.checks.size(); ++i) {
    AdviceCheck c;
    c.id = run_before.checks[i].identity.id();
    const CheckVerdict& b = before.checks[i];
    c.verdict_before = verdict_name(b.verdict);
    const CheckVerdict* a = nullptr;
    if (run_after != nullptr && after != nullptr) {
      for (size_t k = 0; k < run_after->checks.size() && k < after->checks.size(); ++k) {
        if (run_after->checks[k].identity.id() == c.id) a = &after->checks[k];
      }
    }
    if (a != nullptr) c.verdict_after = verdict_name(a->verdict);
    for (const MetricVerdict& v : b.metrics) {
      if (!v.threshold) continue;  // only what the gate looks at
      AdviceMetric m;
      m.metric = metric_name(v.metric);
      m.statistic = v.statistic;
      m.bound = v.threshold->bound;
      m.upper = v.threshold->upper;
      fill(m, v, false);
      if (a != nullptr) {
        for (const MetricVerdict& w : a->metrics) {
          if (w.metric == v.metric) fill(m, w, true);
        }
      }
      c.metrics.push_back(std::move(m));
    }
    out.push_back(std::move(c));
  }
  return out;
}

int64_t AdviceResult::added_bytes() const {
  int64_t n = 0;
  for (size_t k : search.chosen) n += candidates[k].added_bytes();
  return n;
}

int AdviceResult::exit_code() const { return already_passes || search.found ? 0 : 1; }

}  // namespace sg
