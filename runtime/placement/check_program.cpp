// One shard's placement run on a program in memory: predict, import the plan, run the
// contract checks, apply the gate.
#include "placement/rule_predicates.h"
#include "shardgate/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

namespace sg {

ShardCheck check_program(const std::string& path, const Program& program, const ModelFacts& facts,
                         const std::string& program_sha256, const ShardCheckOptions& options) {
  ShardCheck check;
  check.path = path;
  check.program_sha256 = program_sha256;
  check.threshold = options.threshold;
  check.strict = options.strict;
  auto rows = predict_placement(program, facts, options.predict);
  if (!rows.is_ok()) {
    check.error = std::move(rows).take_status().with_context(path);
    return check;
  }
  check.ops = std::move(rows).value();
  if (options.plan || !options.plan_path.empty()) {
    std::shared_ptr<const ComputePlanDump> plan = options.plan;
    if (!plan) {
      auto loaded = load_compute_plan(options.plan_path);
      if (!loaded.is_ok()) {
        check.error = std::move(loaded).take_status();
        return check;
      }
      plan = std::make_shared<const ComputePlanDump>(std::move(loaded).value());
    }
    // A function the dump lists that the shard lacks: the dump describes another program, even
    // when it lists no op there (an empty function passed unnoticed: nothing was joined).
    for (const std::string& name : plan->functions) {
      const bool in_shard = std::any_of(program.functions.begin(), program.functions.end(),
                                        [&](const Function& f) { return f.name == name; });
      if (!in_shard) {
        check.error = Status(ErrorCode::kFormat,
                             fmt::format("{}: function '{}' of the dump is not in the shard: the "
                                         "dump does not match this program", plan->filename, name));
        return check;
      }
    }
    auto failures = apply_compute_plan(check.ops, *plan, program_sha256);
    if (!failures.is_ok()) {
      check.error = std::move(failures).take_status();
      return check;
    }
    check.plan_failures = std::move(failures).value();
    check.source = PlacementSource::kPlan;
    check.plan_path = options.plan_path.empty() ? plan->filename : options.plan_path;
    check.plan_sha256 = plan->sha256;
    check.plan_matched_by = plan_match_basis(*plan);
    check.plan_taken_on = plan_provenance(*plan);
    // The per-op devices come from MLComputePlan, which can name the NE for a model whose ANE
    // compilation then fails (entries 30, 34, 57: the model runs on the CPU or GPU). A dump whose
    // logs record such a failure is evidence against residency, so the shard fails.
    for (const std::string& e : plan->ane_compile_errors) {
      check.shard_failures.push_back(fmt::format(
          "plan {}: the Mac's log records an ANE compile failure, so Core ML ran the model off "
          "the NE whatever the per-op devices say: {}", check.plan_path, e));
    }
    // A package dump lists the package's ops; an op Core ML's compiler added (or renamed) has no
    // package op to carry its device, so the verdict would silently leave out work the device
    // really runs. Only a dump of the .mlmodelc itself lists it.
    if (!plan->compiled_only.empty()) {
      constexpr size_t kNamed = 5;
      const size_t n = plan->compiled_only.size();
      std::vector<std::string> named(plan->compiled_only.begin(),
                                     plan->compiled_only.begin() + std::min(n, kNamed));
      check.shard_failures.push_back(fmt::format(
          "plan {}: the compiled program Core ML runs has {} op(s) that no op of the package maps "
          "onto (model.op_mapping.compiled_only: {}{}), so their devices are judged nowhere: dump "
          "the compiled .mlmodelc itself with dump_compute_plan.py and gate that",
          check.plan_path, n, fmt::join(named, "; "), n > kNamed ? "; ..." : ""));
    }
    for (const std::string& e : plan->espresso_unsupported) {
      check.shard_failures.push_back(fmt::format(
          "plan {}: the Mac's log reports an op unsupported on the NE: {}", check.plan_path, e));
    }
  }
  check.summary = summarize_residency(check.ops);
  check.checks = run_contract_checks(program, facts, options.checks, options.predict);
  // Shard-level limits: a shard over the per-shard weight limit cannot be deployed on the NE
  // whatever its ops (G6); the overlay marks its ANE ops at risk, this fails the shard.
  const uint64_t weight_bytes =
      facts.weight_bytes ? *facts.weight_bytes : placement::blob_weight_bytes(program);
  if (weight_bytes > options.predict.max_weight_bytes) {
    check.shard_failures.push_back(
        fmt::format("G6: weights {} bytes > per-shard limit {} bytes", weight_bytes,
                    options.predict.max_weight_bytes));
  }
  check.model_verdict = model_verdict_of(check.summary, !check.shard_failures.empty());
  check.verdict = evaluate_residency_gate(check.ops, check.summary, check.plan_failures,
                                          check.checks, check.threshold, check.strict);
  if (!check.shard_failures.empty()) {
    check.verdict.failures.insert(check.verdict.failures.begin(), check.shard_failures.begin(),
                                  check.shard_failures.end());
    check.verdict.passed = false;
  }
  return check;
}

}  // namespace sg
