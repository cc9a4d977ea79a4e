// A chain against its goldens: run the chain (free-running, teacher-forced or both) and hand
// every checkpoint to the shared comparison engine. No metric is computed here.
#include "shardgate/chain.h"

#include "shardgate/golden.h"
#include "shardgate/io.h"

#include <set>

namespace sg {
namespace {

std::string fmt_bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
}

constexpr std::string_view kFreeRunningAnswers =
    "the chain as deployed: every step reads what the steps before it produced, so each "
    "checkpoint carries the error accumulated upstream";
constexpr std::string_view kTeacherForcedAnswers =
    "each shard's own error: every layer's residual input is the golden of the layer before "
    "(steps without a layer, such as a head, take the golden of the hidden checkpoint they "
    "read); accumulated drift is not covered, run --both for it";

}  // namespace

Result<FidelityRun> run_chain_fidelity(const ChainManifest& chain, const GoldenSource& goldens,
                                       const ChainFidelityOptions& options) {
  SG_CHECK(!options.modes.empty(), ErrorCode::kUsage, "{}: no mode to run", chain.path);
  SG_CHECK(!chain.checkpoints.empty(), ErrorCode::kUsage,
           "{}: the chain has no checkpoints: nothing to compare", chain.path);
  // Every golden must exist before anything runs: a typo should not cost a full chain run.
  // All missing ones are named at once (a dump of another model misses them all), not one per
  // attempt.
  std::vector<std::string> missing;
  for (size_t i = 0; i < chain.checkpoints.size(); ++i) {
    const ChainCheckpoint& cp = chain.checkpoints[i];
    if (goldens.find(cp.golden) == nullptr) {
      missing.push_back(fmt::format("checkpoints[{}].golden: '{}' is not in the golden dump {}", i,
                                    cp.golden, goldens.path()));
    }
  }
  if (!missing.empty()) {
    return make_error(ErrorCode::kUsage, "{}: {}{}", chain.path,
                      missing.size() == 1 ? std::string()
                                          : fmt::format("{} of {} checkpoints have no golden: ",
                                                        missing.size(), chain.checkpoints.size()),
                      fmt::join(missing, "; "));
  }
  for (const ChainCheckpoint& cp : chain.checkpoints) {
    SG_TRY(require_position_axis(goldens, *goldens.find(cp.golden)));
  }
  bool teacher_forced = false;
  for (ChainMode m : options.modes) teacher_forced = teacher_forced || m == ChainMode::kTeacherForced;
  SG_TRY(preflight_chain(chain, &goldens, teacher_forced));
  const bool teacher_forced_only = options.modes.size() == 1 && teacher_forced;
  SG_CHECK(options.slice_count >= 1 && options.slice_index >= 0 &&
               options.slice_index < options.slice_count,
           ErrorCode::kUsage, "slice {} of {}: the index must be in [0, count)",
           options.slice_index, options.slice_count);
  SG_CHECK(teacher_forced_only || options.slice_count == 1, ErrorCode::kUsage,
           "{}: only a teacher-forced run can be split across jobs (free-running steps are "
           "sequential: each reads what the steps before it produced)",
           chain.path);
  FidelityRun run;
  std::optional<std::set<std::string>> only_steps;
  if (teacher_forced_only) {
    SG_ASSIGN_OR_RETURN(std::vector<SliceGroup> groups, teacher_forced_groups(chain, goldens));
    RunSlice slice;
    slice.index = options.slice_index;
    slice.count = options.slice_count;
    slice.groups_total = static_cast<int64_t>(groups.size());
    for (const ChainStep& step : chain.steps) slice.chain_steps.push_back(step.id);
    for (const ChainCheckpoint& cp : chain.checkpoints) slice.chain_checkpoints.push_back(cp.golden);
    only_steps.emplace();
    for (SliceGroup& g : groups) {
      if (!slice_runs_group(g, slice.index, slice.count)) continue;
      only_steps->insert(g.steps.begin(), g.steps.end());
      slice.groups.push_back(std::move(g));
    }
    run.slice = std::move(slice);
  }
  run.command = "run";
  run.options = options.metrics;
  if (!run.slice || run.slice->count == 1) {
    // Goldens no checkpoint compares (the dump's inputs aside, which feed the chain): the
    // verdict line names them, as compare does for a partial candidate, and --strict fails
    // them, so a chain that checks only its first layer cannot pass as if it checked all.
    std::set<std::string> checked;
    for (const ChainCheckpoint& cp : chain.checkpoints) checked.insert(cp.golden);
    for (const GoldenEntry& e : goldens.entries()) {
      if (e.kind != "input" && checked.count(e.name) == 0) run.reference_only.push_back(e.name);
    }
  }
  SG_ASSIGN_OR_RETURN(const std::string chain_sha, sha256_file(chain.path));
  run.inputs.push_back({"chain", chain.path, chain_sha});
  SG_ASSIGN_OR_RETURN(const std::string golden_sha, sha256_file(goldens.identity_file()));
  run.inputs.push_back({"reference", goldens.path(), golden_sha});
  run.notes.push_back(fmt::format("chain '{}': {} steps, precision {}", chain.name,
                                  chain.steps.size(), precision_name(options.precision)));

  // Each reference once, for every mode (tensors are views of mapped files).
  std::vector<Tensor> references;
  references.reserve(chain.checkpoints.size());
  for (const ChainCheckpoint& cp : chain.checkpoints) {
    SG_ASSIGN_OR_RETURN(Tensor reference, goldens.load(cp.golden));
    references.push_back(std::move(reference));
  }

  const bool label_all = options.modes.size() > 1;
  std::map<std::string, std::string> fingerprints;  // shard path -> fingerprint, across modes
  for (ChainMode mode : options.modes) {
    ChainRunOptions ro;
    ro.mode = mode;
    ro.precision = options.precision;
    ro.threads = options.threads;
    ro.goldens = &goldens;
    ro.fingerprints = &fingerprints;
    ro.only_steps = only_steps;
    ro.weight_overrides = options.weight_overrides;
    ro.prefetch = options.prefetch;
    if (options.on_step) ro.on_step = [&](const ChainStepRecord& r) { options.on_step(mode, r); };
    SG_ASSIGN_OR_RETURN(ChainRunResult result, run_chain(chain, ro));
    // What this view answers and which input every shard was given.
    ReportView view;
    view.mode = chain_mode_name(mode);
    view.answers = mode == ChainMode::kTeacherForced ? std::string(kTeacherForcedAnswers)
                                                     : std::string(kFreeRunningAnswers);
    for (const ChainStepRecord& s : result.steps) {
      const ChainStep* step = chain.find_step(s.id);
      if (s.is_combine || !step) continue;
      for (const auto& [input, tensor] : step->inputs) {
        StepFeed feed{s.id, input, tensor, chain.producer(tensor) ? "chain output" : "chain input", ""};
        for (const auto& [forced, golden] : s.teacher_forced) {
          if (forced == input) {
            feed.source = "golden";
            feed.golden = golden;
          }
        }
        view.feeds.push_back(std::move(feed));
      }
    }
    run.views.push_back(std::move(view));
    // Provenance: every shard step once (the modes run the same steps).
    if (run.shards.empty()) {
      for (const ChainStepRecord& s : result.steps) {
        if (s.is_combine) continue;
        const ChainStep* step = chain.find_step(s.id);
        run.shards.push_back({s.id, step ? step->shard : std::string(), s.shard_fingerprint});
      }
    }

    std::vector<std::pair<std::string, std::string>> labels;
    if (label_all || mode == ChainMode::kTeacherForced) labels.emplace_back("mode", chain_mode_name(mode));
    for (size_t i = 0; i < chain.checkpoints.size(); ++i) {
      const ChainCheckpoint& cp = chain.checkpoints[i];
      const ChainStep* producer = chain.producer(cp.tensor);
      // A CI slice checks the checkpoints its own steps made.
      // (One made by no step, a chain input, belongs to slice 0.)
      if (only_steps && (producer ? !only_steps->count(producer->id) : options.slice_index != 0)) {
        continue;
      }
      const GoldenEntry* entry = goldens.find(cp.golden);
      const Tensor& reference = references[i];
      const Tensor& candidate = result.tensors.at(cp.tensor);
      CheckIdentity id;
      id.checkpoint = cp.golden;
      id.kind = cp.kind;
      id.layer = cp.layer;
      id.shard = producer ? producer->id : "";
      id.labels = labels;
      auto check = compare_tensors(id, candidate, reference, entry->position_axis, options.metrics);
      if (!check) {
        return std::move(check).take_status().with_context(
            fmt::format("{}: checkpoint '{}' (chain tensor '{}')", chain.path, cp.golden, cp.tensor));
      }
      if (auto t = result.nonreproducible.find(cp.tensor); t != result.nonreproducible.end()) {
        check->excluded = t->second;
      }
      if (cp.kind == "hidden") {
        // The whole tensor as one vector: the "over all positions" number next to the
        // per-position rows the gate uses.
        auto whole = compare_tensors(id, candidate, reference, std::nullopt, options.metrics);
        if (whole && !whole->rows.empty() && whole->rows[0].value(Metric::kCosine)) {
          const RowResult& row = whole->rows[0];
          run.notes.push_back(fmt::format(
              "{}: whole-tensor cosine {:.6f}, norm ratio {:.6f}", id.id(),
              *row.value(Metric::kCosine), row.value(Metric::kNormRatio).value_or(0.0)));
        }
      }
      run.checks.push_back(std::move(*check));
    }
    const std::string tag = label_all ? fmt::format("[{}] ", chain_mode_name(mode)) : "";
    if (!result.nonreproducible.empty()) {
      std::vector<std::string> names;
      for (const auto& [tensor, why] : result.nonreproducible) names.push_back(tensor);
      run.notes.push_back(fmt::format(
          "{}not reproducible on a device: chain tensors {} depend on random ops (this tool draws "
          "a documented seeded stream, a device its own); checks on them are measured but "
          "excluded from the gate",
          tag, fmt::join(names, ", ")));
    }
    if (mode == ChainMode::kTeacherForced) {
      for (const ChainStepRecord& s : result.steps) {
        for (const auto& [input, golden] : s.teacher_forced) {
          run.notes.push_back(fmt::format("{}teacher-forced: step '{}' input '{}' <- golden '{}'",
                                          tag, s.id, input, golden));
        }
      }
    }
    if (result.first_nonfinite) {
      run.notes.push_back(fmt::format("{}first non-finite value: step '{}', {}", tag,
                                      result.first_nonfinite->step,
                                      describe_nonfinite(result.first_nonfinite->where)));
    }
    run.notes.push_back(fmt::format("{}peak memory: chain tensors {}, largest step {}", tag,
                                    fmt_bytes(result.peak_chain_bytes),
                                    fmt_bytes(result.peak_step_bytes)));
  }
  return run;
}

}  // namespace sg
