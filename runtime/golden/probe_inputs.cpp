// Realistic probe inputs (--inputs-from CHAIN.json): what a shard's step receives when every
// tensor it reads comes from the FP16 goldens (probe.h says which golden and why).
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/npy.h"
#include "shardgate/probe.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace sg {
namespace {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool eq = std::filesystem::equivalent(a, b, ec);
  return !ec && eq;
}

class GoldenInputBuilder {
 public:
  GoldenInputBuilder(const ChainManifest& chain, const GoldenSource& goldens, bool steps_are_baselines,
                     const std::function<Result<std::string>(const std::string&)>& baseline_of,
                     Precision precision, int threads, ChainProbeCache& cache)
      : chain_(chain),
        goldens_(goldens),
        steps_are_baselines_(steps_are_baselines),
        baseline_of_(baseline_of),
        precision_(precision),
        threads_(threads),
        cache_(cache),
        memo_(cache.tensors),
        origin_(cache.origins) {}

  // The inputs of a shard step: shard input -> tensor, with a note per input. `runs` gets the
  // baselines run to make them (their union).
  Result<std::map<std::string, Tensor>> step_inputs(const ChainStep& step, int depth,
                                                    std::vector<ReportShard>* runs = nullptr) {
    SG_CHECK(step.state.empty(), ErrorCode::kUnsupported,
             "{}: step '{}' carries chain state: --inputs-from cannot rebuild its inputs "
             "(probe it with --input)",
             chain_.path, step.id);
    SG_ASSIGN_OR_RETURN(auto forced, teacher_forced_inputs(chain_, step, goldens_));
    std::map<std::string, Tensor> out;
    for (const auto& [input, tensor] : step.inputs) {
      std::optional<std::string> golden;
      for (const auto& [name, g] : forced) {
        if (name == input) golden = g;
      }
      if (golden) {
        SG_ASSIGN_OR_RETURN(out[input], goldens_.load(*golden));
        if (depth == 0) notes_.push_back(fmt::format("input '{}': golden '{}' (teacher-forced)", input, *golden));
      } else {
        SG_ASSIGN_OR_RETURN(out[input], value(tensor, depth));
        if (depth == 0) notes_.push_back(fmt::format("input '{}': {}", input, origin_[tensor]));
        if (runs != nullptr) add_runs(*runs, cache_.runs[tensor]);
      }
    }
    return out;
  }

  std::vector<std::string> take_notes() { return std::move(notes_); }
  std::vector<ReportShard> take_executed() { return std::move(executed_); }

 private:
  // A chain tensor as the FP16 reference has it.
  Result<Tensor> value(const std::string& tensor, int depth) {
    if (auto it = memo_.find(tensor); it != memo_.end()) {
      // Made before (by this call or an earlier one sharing the cache): the baselines it took
      // are still part of this shard's inputs' provenance.
      for (const ReportShard& r : cache_.runs[tensor]) note_executed(r);
      return it->second;
    }

    SG_CHECK(depth < 256, ErrorCode::kFormat, "{}: tensor '{}': the chain is nested too deeply",
             chain_.path, tensor);
    Tensor t;
    if (const ChainCheckpoint* cp = chain_.find_checkpoint(tensor);
        cp != nullptr && goldens_.find(cp->golden) != nullptr) {
      SG_ASSIGN_OR_RETURN(t, goldens_.load(cp->golden));
      origin_[tensor] = fmt::format("golden '{}' (checkpoint of chain tensor '{}')", cp->golden, tensor);
    } else if (const ChainInput* in = find_input(tensor)) {
      if (in->source == ChainInput::Source::kGolden) {
        SG_ASSIGN_OR_RETURN(t, goldens_.load(in->ref));
      } else {
        SG_ASSIGN_OR_RETURN(t, read_npy(in->ref));
      }
      origin_[tensor] = fmt::format("chain input '{}' ({})", tensor, in->written);
    } else {
      const ChainStep* p = chain_.producer(tensor);
      SG_CHECK(p != nullptr, ErrorCode::kFormat, "{}: no step produces tensor '{}'", chain_.path, tensor);
      if (p->is_combine) {
        std::vector<Tensor> parts;
        std::vector<ReportShard> runs;
        for (const std::string& i : p->combine_inputs) {
          SG_ASSIGN_OR_RETURN(Tensor x, value(i, depth + 1));
          parts.push_back(std::move(x));
          add_runs(runs, cache_.runs[i]);
        }
        cache_.runs[tensor] = std::move(runs);
        if (p->combine == CombineKind::kSum) {
          SG_ASSIGN_OR_RETURN(t, combine_sum(parts, precision_));
        } else {
          SG_ASSIGN_OR_RETURN(t, combine_concat(parts, p->axis));
        }
      } else {
        SG_TRY(run_producer(*p, depth));
        auto it = memo_.find(tensor);
        SG_CHECK(it != memo_.end(), ErrorCode::kShape, "{}: step '{}' did not output '{}'",
                 chain_.path, p->id, tensor);
        t = it->second;
      }
      origin_[tensor] = fmt::format("chain tensor '{}' computed by the FP16 baseline of step '{}' "
                                    "from the goldens", tensor, p->id);
    }
    memo_[tensor] = t;
    return t;
  }

  // Adds the runs of `more` to `to`, each once.
  static void add_runs(std::vector<ReportShard>& to, const std::vector<ReportShard>& more) {
    for (const ReportShard& r : more) {
      const bool known = std::any_of(to.begin(), to.end(), [&r](const ReportShard& e) {
        return e.id == r.id && e.path == r.path;
      });
      if (!known) to.push_back(r);
    }
  }
  void note_executed(const ReportShard& r) { add_runs(executed_, {r}); }

  const ChainInput* find_input(const std::string& tensor) const {
    for (const ChainInput& in : chain_.inputs) {
      if (in.tensor == tensor) return &in;
    }
    return nullptr;
  }

  Status run_producer(const ChainStep& step, int depth) {
    std::vector<ReportShard> runs;  // what its outputs took: its inputs' baselines and itself
    SG_ASSIGN_OR_RETURN(auto inputs, step_inputs(step, depth + 1, &runs));
    std::string shard_path = step.shard;
    if (!steps_are_baselines_) {
      auto b = baseline_of_(step.shard);
      if (!b) {
        return std::move(b).take_status().with_context(fmt::format(
            "--inputs-from {}: step '{}' must run to make the input of the probed shard, and its "
            "FP16 baseline is needed (give --baseline-replace, or the FP16 chain)",
            chain_.path, step.id));
      }
      shard_path = *b;
    }
    SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> shard, Shard::open(shard_path));
    SG_ASSIGN_OR_RETURN(std::string fingerprint, shard->fingerprint());
    add_runs(runs, {{step.id, shard_path, std::move(fingerprint)}});
    add_runs(executed_, runs);
    ++cache_.baseline_runs;
    Executor exec(shard);
    RunOptions ro;
    ro.precision = precision_;
    ro.threads = threads_;
    StateStore states;
    auto r = exec.run(step.function, inputs, ro, &states);
    if (!r) return std::move(r).take_status().with_context(fmt::format("{}: step '{}'", chain_.path, step.id));
    for (const auto& [out_name, tensor] : step.outputs) {
      auto it = r->outputs.find(out_name);
      SG_CHECK(it != r->outputs.end(), ErrorCode::kShape, "{}: step '{}': {} has no output '{}'",
               chain_.path, step.id, shard_path, out_name);
      memo_[tensor] = it->second;
      cache_.runs[tensor] = runs;
    }
    return Status::ok();
  }

  const ChainManifest& chain_;
  const GoldenSource& goldens_;
  bool steps_are_baselines_;
  const std::function<Result<std::string>(const std::string&)>& baseline_of_;
  Precision precision_;
  int threads_;
  ChainProbeCache& cache_;
  std::map<std::string, Tensor>& memo_;
  std::map<std::string, std::string>& origin_;
  std::vector<std::string> notes_;
  std::vector<ReportShard> executed_;
};

}  // namespace

Result<ChainProbeInputs> chain_probe_inputs(
    const ChainManifest& chain, const GoldenSource& goldens, const std::string& candidate_path,
    const std::string& baseline_path,
    const std::function<Result<std::string>(const std::string&)>& baseline_of,
    Precision precision, int threads, ChainProbeCache* cache) {
  const ChainStep* step = nullptr;
  bool steps_are_baselines = false;
  for (const ChainStep& s : chain.steps) {
    if (s.is_combine) continue;
    if (same_file(s.shard, candidate_path)) {
      step = &s;
      break;
    }
    if (same_file(s.shard, baseline_path)) {
      step = &s;
      steps_are_baselines = true;
      break;
    }
  }
  SG_CHECK(step != nullptr, ErrorCode::kUsage,
           "--inputs-from {}: no step of the chain runs {} or its baseline {}", chain.path,
           candidate_path, baseline_path);
  ChainProbeCache local;
  GoldenInputBuilder builder(chain, goldens, steps_are_baselines, baseline_of, precision, threads,
                             cache != nullptr ? *cache : local);
  ChainProbeInputs out;
  out.step_id = step->id;
  out.layer = step->layer;
  SG_ASSIGN_OR_RETURN(out.inputs, builder.step_inputs(*step, 0));
  out.executed = builder.take_executed();
  for (std::string& n : builder.take_notes()) {
    out.notes.push_back(fmt::format("{} (step '{}'): {}", candidate_path, step->id, n));
  }
  // Output kinds (see probe.h).
  std::set<std::string> summed;
  for (const ChainStep& s : chain.steps) {
    if (s.is_combine && s.combine == CombineKind::kSum) summed.insert(s.combine_inputs.begin(), s.combine_inputs.end());
  }
  for (const auto& [out_name, tensor] : step->outputs) {
    if (const ChainCheckpoint* cp = chain.find_checkpoint(tensor)) {
      out.output_kinds[out_name] = cp->kind;
      // The golden says where its positions are; probe need not guess from the rank.
      if (const GoldenEntry* e = goldens.find(cp->golden)) out.position_axes[out_name] = e->position_axis;
    } else if (!step->residual_input && summed.count(tensor)) {
      out.output_kinds[out_name] = "partial_sum";
      // The residual frame: an input of the step that the same sum adds too.
      for (const ChainStep& s : chain.steps) {
        if (!s.is_combine || s.combine != CombineKind::kSum) continue;
        if (std::find(s.combine_inputs.begin(), s.combine_inputs.end(), tensor) == s.combine_inputs.end()) continue;
        for (const auto& [in_name, in_tensor] : step->inputs) {
          if (std::find(s.combine_inputs.begin(), s.combine_inputs.end(), in_tensor) != s.combine_inputs.end()) {
            out.frames[out_name] = in_name;
          }
        }
      }
    } else if (step->residual_input) {
      out.output_kinds[out_name] = "hidden";
    }
  }
  return out;
}

}  // namespace sg
