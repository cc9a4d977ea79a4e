#include "golden/run_culprits.h"

#include "shardgate/culprits.h"
#include "shardgate/probe.h"
#include "shardgate/shard.h"

#include <fmt/format.h>

#include <algorithm>

namespace sg::golden_cli {
namespace {

// The index of the step that writes chain tensor `tensor` (-1 when none: a chain input).
int64_t producer_of(const ChainManifest& chain, const std::string& tensor) {
  for (size_t s = 0; s < chain.steps.size(); ++s) {
    const ChainStep& step = chain.steps[s];
    if (step.is_combine ? step.output == tensor
                        : std::any_of(step.outputs.begin(), step.outputs.end(),
                                      [&](const auto& o) { return o.second == tensor; })) {
      return static_cast<int64_t>(s);
    }
  }
  return -1;
}

}  // namespace

Status add_run_culprits(GoldenReport& report, const ChainManifest& chain, const GoldenSource& goldens,
                        const cli::BaselineArgs& baseline, Precision precision, int threads) {
  const GateSummary& summary = report.evaluation.summary;
  if (summary.verdict != Verdict::kFail || !summary.first_failure_check) {
    report.culprits_note = "no check failed: no culprit search";
    return Status::ok();
  }
  const CheckIdentity& failing = report.run.checks[*summary.first_failure_check].identity;
  auto cp = std::find_if(chain.checkpoints.begin(), chain.checkpoints.end(),
                         [&](const ChainCheckpoint& c) { return c.golden == failing.checkpoint; });
  SG_CHECK(cp != chain.checkpoints.end(), ErrorCode::kInternal,
           "the failing check '{}' is no checkpoint of {}", failing.checkpoint, chain.path);
  const int64_t producer = producer_of(chain, cp->tensor);
  if (producer < 0) {
    report.culprits_note = fmt::format("the first failing check {} is a chain input: no shard made it",
                                       failing.id());
    return Status::ok();
  }
  // Every step up to and including the group that makes that checkpoint: a free-running
  // failure at the logits is often error that entered layers earlier and accumulated (the
  // views disagree), so the search covers everything upstream of the failure, each step on
  // golden inputs (the groups are the units that run together from goldens).
  SG_ASSIGN_OR_RETURN(std::vector<SliceGroup> groups, teacher_forced_groups(chain, goldens));
  const std::string& producer_id = chain.steps[static_cast<size_t>(producer)].id;
  std::vector<std::string> steps;
  bool reached = false;
  for (const SliceGroup& g : groups) {
    steps.insert(steps.end(), g.steps.begin(), g.steps.end());
    if (std::find(g.steps.begin(), g.steps.end(), producer_id) != g.steps.end()) {
      reached = true;
      break;
    }
  }
  SG_CHECK(reached, ErrorCode::kInternal, "step '{}' is in no teacher-forced group", producer_id);

  const std::function<Result<std::string>(const std::string&)> baseline_of =
      [&baseline](const std::string& shard) { return baseline.step_baseline_of(shard); };
  CulpritReport culprits;
  culprits.tool_version = report.tool_version;
  culprits.command_line = report.command_line;
  culprits.inputs = fmt::format("the goldens of {}: each step's inputs as the chain feeds it from "
                                "FP16 goldens (as culprits --inputs-from)", chain.path);
  std::vector<std::string> searched;
  ChainProbeCache chain_cache;  // a layer's FP16 attention runs once for all its packs
  for (const std::string& id : steps) {
    const ChainStep& step = *std::find_if(chain.steps.begin(), chain.steps.end(),
                                          [&](const ChainStep& s) { return s.id == id; });
    if (step.is_combine) continue;
    SG_ASSIGN_OR_RETURN(const std::string base_path, baseline_of(step.shard));
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const Shard> cand, Shard::open(step.shard));
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const Shard> base, Shard::open(base_path));
    SG_ASSIGN_OR_RETURN(ChainProbeInputs in, chain_probe_inputs(chain, goldens, step.shard, base_path,
                                                                baseline_of, precision, threads,
                                                                &chain_cache));
    CulpritOptions co;
    co.function = step.function;
    co.inputs = std::move(in.inputs);
    co.precision = precision;
    co.threads = threads;
    SG_ASSIGN_OR_RETURN(CulpritResult result, find_culprits(cand, base, co));
    culprits.shards.push_back(std::move(result));
    searched.push_back(step.id);
  }
  report.culprits_note = fmt::format(
      "culprit search on {} shard step(s) ({} .. {}: every step up to the one that makes {}, "
      "the first failing check), each against its baseline on golden inputs: {} source op(s)",
      searched.size(), searched.empty() ? "" : searched.front(), searched.empty() ? "" : searched.back(),
      failing.id(), culprits.source_ops());
  report.culprits = std::move(culprits);
  return Status::ok();
}

}  // namespace sg::golden_cli
