// ane-validator: lists every op of each shard with its ANE placement (predicted by the rule
// table, or imported from a compute-plan dump) and gates residency.
//
//   ane-validator SHARD... [--ops] [--plan DUMP.json]... [--plan-dir DIR] [--min-residency PCT]
//                 [--check compression=MIN_BYTES|weight-budget=BYTES|fp16-io|dims]...
//                 [--gate FILE] [--strict] [--json FILE] [--junit FILE] [--markdown FILE]
//                 [--shard-index I --shard-count N] [-q|-v]
//
// Exit codes: 0 pass, 1 gate failed, 2 bad input or usage, 3 internal error.
#include "common/args.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"
#include "shardgate/residency_report.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>

namespace {

constexpr const char* kTool = "ane-validator";
constexpr const char* kVersion = "0.1.0";
constexpr const char* kDefaultGateFile = "gates/residency.json";

struct Options {
  std::vector<std::string> shards;
  bool ops = false;
  std::vector<std::string> plans;
  std::string plan_dir;
  std::optional<double> min_residency;
  std::vector<std::string> checks;
  sg::cli::ReportArgs report;
  sg::cli::GateArgs gate;
  sg::cli::LogArgs log;
  sg::cli::SelectionArgs selection;
};

int usage_error(const sg::Status& status) {
  std::cerr << kTool << ": " << status.message() << "\n";
  return sg::exit_code(status.code());
}

std::string stem(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

// The plan of one shard: its path, and the dump when assign_plans parsed it already (to read
// model.name); check_shard loads the others.
struct AssignedPlan {
  std::string path;
  std::shared_ptr<const sg::ComputePlanDump> dump;
};

// Pairs shards with plans: one shard takes the only --plan; otherwise each dump names its
// shard in model.name (modelID in Apple's form); --plan-dir holds <shard>.json files.
// `all` is every shard given (before --shard-index selection), so one --plan list serves every
// CI job of a split run; plans of shards outside the slice are ignored.
sg::Result<std::map<std::string, AssignedPlan>> assign_plans(
    const Options& opt, const std::vector<std::string>& all,
    const std::vector<std::string>& shards) {
  std::map<std::string, AssignedPlan> plan_of;
  if (!opt.plans.empty()) {
    if (all.size() == 1 && opt.plans.size() == 1) {
      plan_of[all[0]] = AssignedPlan{opt.plans[0], nullptr};
    } else {
      for (const std::string& plan_path : opt.plans) {
        SG_ASSIGN_OR_RETURN(sg::ComputePlanDump loaded, sg::load_compute_plan(plan_path));
        auto dump = std::make_shared<const sg::ComputePlanDump>(std::move(loaded));
        bool matched = false;
        for (const std::string& shard : all) {
          if (!dump->model_name.empty() && sg::path_basename(shard) == dump->model_name) {
            SG_CHECK(!plan_of.count(shard), sg::ErrorCode::kUsage,
                     "--plan {}: shard {} already has the plan {}", plan_path, shard,
                     plan_of[shard].path);
            plan_of[shard] = AssignedPlan{plan_path, dump};
            matched = true;
          }
        }
        SG_CHECK(matched, sg::ErrorCode::kUsage,
                 "--plan {}: its model.name '{}' names none of the given shards (with several "
                 "shards each dump is matched by model.name)", plan_path, dump->model_name);
      }
    }
  }
  if (!opt.plan_dir.empty()) {
    for (const std::string& shard : shards) {
      if (plan_of.count(shard)) continue;
      std::string name = sg::path_basename(shard);
      std::vector<std::string> candidates = {opt.plan_dir + "/" + name + ".json",
                                             opt.plan_dir + "/" + stem(name) + ".json",
                                             opt.plan_dir + "/" + stem(name) + ".plan.json"};
      for (const std::string& c : candidates) {
        if (sg::path_exists(c)) {
          plan_of[shard] = AssignedPlan{c, nullptr};
          break;
        }
      }
      SG_CHECK(plan_of.count(shard), sg::ErrorCode::kUsage,
               "--plan-dir {}: no plan for shard {} (looked for {}, {}, {})", opt.plan_dir, shard,
               candidates[0], candidates[1], candidates[2]);
    }
  }
  return plan_of;
}

sg::Result<sg::ResidencyPolicy> load_policy(const Options& opt) {
  if (!opt.gate.gate_file.empty()) return sg::load_residency_policy(opt.gate.gate_file);
  if (sg::path_exists(kDefaultGateFile)) return sg::load_residency_policy(kDefaultGateFile);
  return sg::ResidencyPolicy{};  // built-in default: 100% residency
}

int run(int argc, char** argv) {
  Options opt;
  CLI::App app("List every op of Core ML shards with its ANE placement and gate residency.",
               kTool);
  app.set_version_flag("--version", kVersion);
  app.add_option("shards", opt.shards,
                 "Shards: .mlmodelc / .mlpackage directories, globs, or directories holding them");
  app.add_flag("--ops", opt.ops, "Print the full op table of each shard");
  app.add_option("--plan", opt.plans,
                 "Compute-plan dump (JSON) captured on a Mac; with several shards each dump is "
                 "matched by its model.name")
      ->option_text("DUMP.json");
  app.add_option("--plan-dir", opt.plan_dir, "Directory of dumps named <shard>.json")
      ->option_text("DIR");
  app.add_option("--min-residency", opt.min_residency,
                 "Minimum ANE residency in percent (overrides the gate file)")
      ->option_text("PCT")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--check", opt.checks,
                 "Contract check: compression=MIN_BYTES, weight-budget=BYTES, fp16-io, dims")
      ->option_text("CHECK");
  opt.report.add_to(app);
  opt.gate.add_to(app);
  opt.log.add_to(app);
  opt.selection.add_to(app);
  if (auto code = sg::cli::parse_command_line(app, argc, argv)) return *code;

  if (auto s = opt.selection.validate(); !s) return usage_error(s);
  if (auto s = opt.log.validate(); !s) return usage_error(s);
  if (opt.shards.empty()) {
    return usage_error(sg::Status(sg::ErrorCode::kUsage,
                                  "no shard given: nothing checked (run with --help for usage)"));
  }
  sg::ShardCheckOptions base;
  base.strict = opt.gate.strict;
  for (const std::string& spec : opt.checks) {
    auto check = sg::parse_contract_check(spec);
    if (!check) return usage_error(check.status());
    base.checks.push_back(*check);
  }
  auto expanded = sg::cli::expand_shard_paths(opt.shards);
  if (!expanded) return usage_error(expanded.status());
  std::vector<std::string> shards = opt.selection.select(*expanded);
  if (shards.empty()) {
    return usage_error(sg::Status(
        sg::ErrorCode::kUsage,
        fmt::format("--shard-index {} of --shard-count {} selects none of the {} shard(s): "
                    "nothing checked", opt.selection.shard_index, opt.selection.shard_count,
                    expanded->size())));
  }
  auto policy = load_policy(opt);
  if (!policy) return usage_error(policy.status());
  auto plans = assign_plans(opt, *expanded, shards);
  if (!plans) return usage_error(plans.status());

  sg::ResidencyReport report;
  report.tool = kTool;
  report.tool_version = kVersion;
  report.gate_file = policy->filename;
  report.strict = opt.gate.strict;
  report.shard_index = opt.selection.shard_index;
  report.shard_count = opt.selection.shard_count;
  int level = opt.log.level();
  for (const std::string& path : shards) {
    sg::ShardCheckOptions options = base;
    if (opt.min_residency) {
      options.threshold = sg::ResidencyThreshold{*opt.min_residency, "--min-residency", ""};
    } else {
      options.threshold = policy->threshold_for(path);
    }
    if (auto it = plans->find(path); it != plans->end()) {
      options.plan_path = it->second.path;
      options.plan = it->second.dump;
    }
    sg::ShardCheck check = sg::check_shard(path, options);
    bool ok = !check.error && check.verdict.passed;
    if (level >= 0 || !ok) {
      std::cout << sg::residency_summary_line(check) << "\n" << sg::residency_failure_lines(check);
      if (level >= 1 && !check.threshold.reason.empty()) {
        std::cout << "      threshold from " << check.threshold.origin << ": "
                  << check.threshold.reason << "\n";
      }
    }
    if (opt.ops && !check.error) std::cout << sg::residency_op_table(check);
    report.shards.push_back(std::move(check));
  }
  int code = sg::residency_exit_code(report);

  struct Output {
    const std::string& path;
    std::string (*render)(const sg::ResidencyReport&);
  };
  for (const Output& out : {Output{opt.report.json, &sg::residency_report_json},
                            Output{opt.report.junit, &sg::residency_report_junit},
                            Output{opt.report.markdown, &sg::residency_report_markdown}}) {
    if (out.path.empty()) continue;
    if (auto s = sg::write_file_atomic(out.path, out.render(report)); !s) {
      std::cerr << kTool << ": " << s.message() << "\n";
      code = std::max(code, sg::kExitBadInput);
    }
  }
  const sg::ResidencyCounts counts = sg::residency_counts(report);
  std::cout << fmt::format("{}: {} shard(s): {} passed, {} failed, {} error(s) -> exit {}\n", kTool,
                           counts.shards, counts.passed, counts.failed, counts.errors, code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << kTool << ": internal error: " << e.what() << "\n";
    return sg::kExitInternal;
  } catch (...) {
    std::cerr << kTool << ": internal error\n";
    return sg::kExitInternal;
  }
}
