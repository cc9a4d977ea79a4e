// ane-validator: lists every op of each shard with its ANE placement (predicted by the rule
// table, or imported from a compute-plan dump) and gates residency.
//
//   ane-validator SHARD|CHAIN.json... [--ops] [--plan DUMP.json]... [--plan-dir DIR]
//                 [--min-residency PCT]
//                 [--check compression=MIN_BYTES|weight-budget=BYTES|fp16-io|dims]...
//                 [--gate FILE] [--strict] [--json FILE] [--junit FILE] [--markdown FILE]
//                 [--shard-index I --shard-count N] [-q|-v]
//
// Exit codes: 0 pass, 1 gate failed, 2 bad input or usage, 3 internal error.
#include "common/args.h"
#include "common/chain_shards.h"
#include "common/gate_lookup.h"
#include "common/help_text.h"
#include "common/progress.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"
#include "shardgate/report_output.h"
#include "shardgate/residency_report.h"
#include "shardgate/run_inputs.h"
#include "shardgate/shard.h"

#include <CLI/CLI.hpp>

#include <cstdlib>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <exception>
#include <iostream>
#include <map>
#include <memory>

namespace {

constexpr const char* kTool = "ane-validator";
constexpr const char* kVersion = sg::cli::kShardgateVersion;
// Found as gates/residency.json above the shards (find_gate_file), never in the cwd.
constexpr const char* kDefaultGateFile = "residency.json";

struct Options {
  std::vector<std::string> shards;
  bool ops = false;
  std::vector<std::string> plans;
  std::string plan_dir;
  std::optional<double> min_residency;
  std::vector<std::string> checks;
  bool no_fingerprint = false;
  sg::cli::ReportArgs report;
  sg::cli::GateArgs gate;
  sg::cli::LogArgs log;
  sg::cli::SelectionArgs selection;
};

// "ane-validator: usage error: ...": every error message starts with its category, as
// golden-validator's (README, Exit codes).
int usage_error(const sg::Status& status) {
  std::cerr << kTool << ": " << status.to_string() << "\n";
  return sg::exit_code(status.code());
}

// The plan of one shard: its path, and the dump when assign_plans parsed it already;
// check_shard loads the others. check_shard also refuses a dump of another build.
struct AssignedPlan {
  std::string path;
  std::shared_ptr<const sg::ComputePlanDump> dump;
  std::shared_ptr<const sg::Shard> shard;  // opened (and fingerprinted) for pairing, else null
};

struct Candidate {
  std::string path;
  std::shared_ptr<const sg::ComputePlanDump> dump;
  bool given = false;  // from --plan (must pair with some shard), else found in --plan-dir
  bool paired = false;
};

std::string recorded_names(const sg::ComputePlanDump& d) {
  std::string s;
  if (d.package) s += fmt::format("package {} (fingerprint {})", d.package->name, d.package->fingerprint);
  if (d.compiled) {
    s += fmt::format("{}compiled {} (fingerprint {})", s.empty() ? "" : ", ", d.compiled->name,
                     d.compiled->fingerprint);
  }
  if (s.empty()) s = d.model_name.empty() ? "no name" : "model.name '" + d.model_name + "'";
  return s;
}

// Pairs shards with dumps, for either form of a shard. One shard and one --plan: that plan.
// Otherwise every dump given with --plan and every *.json of --plan-dir is a candidate, and a
// shard takes the candidate recording its fingerprint (the package's or the compiled model's),
// else the one whose recorded name is the shard's (suffix ignored) -- check_shard then refuses
// it naming what differs, so a rebuilt shard is never judged by an old dump. `all` is every
// shard given (before --shard-index selection), so one --plan list serves every CI job of a
// split run; --plan-dir must hold a dump for every selected shard.
sg::Result<std::map<std::string, AssignedPlan>> assign_plans(
    const Options& opt, const std::vector<std::string>& all,
    const std::vector<std::string>& shards) {
  std::map<std::string, AssignedPlan> plan_of;
  if (opt.plans.empty() && opt.plan_dir.empty()) return plan_of;
  if (all.size() == 1 && opt.plans.size() == 1 && opt.plan_dir.empty()) {
    plan_of[all[0]] = AssignedPlan{opt.plans[0], nullptr};
    return plan_of;
  }
  std::vector<Candidate> candidates;
  for (const std::string& path : opt.plans) {
    SG_ASSIGN_OR_RETURN(sg::ComputePlanDump loaded, sg::load_compute_plan(path));
    candidates.push_back({path, std::make_shared<const sg::ComputePlanDump>(std::move(loaded)), true});
  }
  if (!opt.plan_dir.empty()) {
    SG_CHECK(sg::is_directory(opt.plan_dir), sg::ErrorCode::kUsage,
             "--plan-dir {}: not a directory", opt.plan_dir);
    std::vector<std::string> files;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(opt.plan_dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->path().extension() == ".json") files.push_back(it->path().string());
    }
    SG_CHECK(!ec, sg::ErrorCode::kIO, "--plan-dir {}: cannot list it: {}", opt.plan_dir,
             ec.message());
    std::sort(files.begin(), files.end());
    for (const std::string& path : files) {
      SG_ASSIGN_OR_RETURN(sg::ComputePlanDump loaded, sg::load_compute_plan(path));
      candidates.push_back({path, std::make_shared<const sg::ComputePlanDump>(std::move(loaded))});
    }
  }
  const bool any_fingerprint = std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) {
    return c.dump->schema_version == 2;
  });
  const std::vector<std::string>& targets = opt.plans.empty() ? shards : all;
  for (const std::string& shard : targets) {
    std::string fingerprint;
    std::shared_ptr<const sg::Shard> opened;  // handed to check_shard: opened and hashed once
    if (any_fingerprint) {
      // A shard that does not open is reported by check_shard; here it just pairs by name.
      if (auto o = sg::Shard::open(shard); o.is_ok()) {
        opened = *o;
        if (auto fp = opened->fingerprint(); fp.is_ok()) fingerprint = *fp;
      }
    }
    auto pick = [&](auto&& matches, const char* how) -> sg::Result<Candidate*> {
      Candidate* found = nullptr;
      for (Candidate& c : candidates) {
        if (!matches(c)) continue;
        SG_CHECK(!found, sg::ErrorCode::kUsage, "shard {}: two dumps match it by {}: {} and {}",
                 shard, how, found ? found->path : "", c.path);
        found = &c;
      }
      return found;
    };
    SG_ASSIGN_OR_RETURN(Candidate* chosen, pick([&](const Candidate& c) {
      return !fingerprint.empty() && sg::plan_records_fingerprint(*c.dump, fingerprint);
    }, "fingerprint"));
    if (!chosen) {
      SG_ASSIGN_OR_RETURN(chosen, pick([&](const Candidate& c) {
        return sg::plan_names_shard(*c.dump, shard);
      }, "name"));
    }
    if (!chosen) continue;
    chosen->paired = true;
    plan_of[shard] = AssignedPlan{chosen->path, chosen->dump, std::move(opened)};
  }
  for (const Candidate& c : candidates) {
    SG_CHECK(!c.given || c.paired, sg::ErrorCode::kUsage,
             "--plan {}: it records {}, which is none of the given shards by fingerprint or "
             "by name", c.path, recorded_names(*c.dump));
  }
  if (!opt.plan_dir.empty()) {
    for (const std::string& shard : shards) {
      SG_CHECK(plan_of.count(shard), sg::ErrorCode::kUsage,
               "--plan-dir {}: no dump for shard {} (none of its {} .json file(s) records the "
               "shard's fingerprint or its name)", opt.plan_dir, shard,
               std::count_if(candidates.begin(), candidates.end(),
                             [](const Candidate& c) { return !c.given; }));
    }
  }
  return plan_of;
}

// --gate, else the gates/residency.json governing the shards, else the built-in default (100 %).
sg::Result<sg::ResidencyPolicy> load_policy(const Options& opt, const std::vector<std::string>& shards) {
  if (!opt.gate.gate_file.empty()) return sg::load_residency_policy(opt.gate.gate_file);
  auto found = sg::cli::find_gate_file(shards, kDefaultGateFile);
  if (!found) return found.status();
  if (!found->empty()) return sg::load_residency_policy(*found);
  return sg::ResidencyPolicy{};
}

int run(int argc, char** argv) {
  Options opt;
  CLI::App app("List every op of Core ML shards with its ANE placement and gate residency.",
               kTool);
  sg::cli::set_version(app, kTool);
  app.add_option("shards", opt.shards,
                 "Shards: .mlmodelc / .mlpackage directories, globs, directories holding them, "
                 "or chain manifests (.json: the shards of their steps)");
  app.add_flag("--ops", opt.ops, "Print the full op table of each shard");
  // One value per occurrence (repeat the option for several): "--plan DUMP SHARD" must leave
  // SHARD to the positional list (CLI11 would otherwise take every following word).
  app.add_option("--plan", opt.plans,
                 "Compute-plan dump (JSON) captured on a Mac (validators/mac/"
                 "dump_compute_plan.py) from the .mlpackage or .mlmodelc; repeatable; with "
                 "several shards each dump pairs with the shard whose fingerprint it records, "
                 "else by name")
      ->option_text("DUMP.json")
      ->allow_extra_args(false);
  app.add_option("--plan-dir", opt.plan_dir,
                 "Directory of dumps (*.json): each shard takes the dump recording its "
                 "fingerprint, else its name")
      ->option_text("DIR");
  app.add_option("--min-residency", opt.min_residency,
                 "Minimum ANE residency in percent (overrides the gate file)")
      ->option_text("PCT")
      // Not CLI::Range: NaN compares false with both bounds, passed it, and switched the
      // residency gate off (a failing shard passed with --min-residency nan).
      ->check(CLI::Validator(
          [](std::string& text) {
            // Decimal digits only: strtod also reads "0x10" as 16, and "" left the option unset
            // (the default 100 applied without a word).
            const bool decimal = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
            char* end = nullptr;
            const double v = decimal ? std::strtod(text.c_str(), &end) : -1.0;
            return decimal && *end == '\0' && v >= 0.0 && v <= 100.0
                       ? std::string()
                       : "must be a percentage in [0, 100], got '" + text + "'";
          },
          "PCT"));
  app.add_option("--check", opt.checks,
                 "Contract check: compression=MIN_BYTES, weight-budget=BYTES, fp16-io, dims; "
                 "repeatable")
      ->option_text("CHECK")
      ->allow_extra_args(false);
  app.add_flag("--no-fingerprint", opt.no_fingerprint,
               "Do not compute each shard's fingerprint (it reads every weight byte; reports then "
               "name the build by program sha256 only). Default: computed");
  opt.report.add_to(app, {sg::ReportFormat::kHtml});
  opt.gate.add_to(app, sg::cli::kAneStrictHelp);
  opt.log.add_to(app);
  opt.selection.add_to(app);
  if (sg::Status s = sg::cli::apply_help_footers(app, kTool); !s.is_ok()) {
    std::cerr << kTool << ": " << s.message() << "\n";
    return sg::kExitInternal;
  }
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
  auto chains = sg::cli::expand_chain_manifests(opt.shards);
  if (!chains) return usage_error(chains.status());
  auto expanded = sg::cli::expand_shard_paths(chains->shards);
  if (!expanded) return usage_error(expanded.status());
  std::vector<std::string> shards = opt.selection.select(*expanded);
  // Before any shard is read: no report may be written into one of them (run_inputs.h; the
  // open of each shard would refuse it too, but as that shard's error after the others ran).
  for (const std::string& path : *expanded) {
    if (auto s = sg::run_inputs::note_tree(path); !s) return usage_error(s);
  }
  // An empty slice (more CI jobs than shards) checks nothing and says so: exit 0, verdict
  // "empty-slice" in the reports, so a matrix sized for a larger model does not fail.
  auto policy = load_policy(opt, *expanded);
  if (!policy) return usage_error(policy.status());
  auto plans = assign_plans(opt, *expanded, shards);
  if (!plans) return usage_error(plans.status());

  sg::ResidencyReport report;
  report.tool = kTool;
  report.tool_version = kVersion;
  report.command_line = sg::cli::command_line();
  report.gate_file = policy->filename;
  report.inputs = chains->chains;
  if (!policy->filename.empty()) {
    auto bytes = sg::read_file(policy->filename);
    if (!bytes) return usage_error(bytes.status());
    report.gate_file_sha256 = sg::sha256_hex(std::as_bytes(std::span<const char>(bytes->data(), bytes->size())));
  }
  report.fingerprinted = !opt.no_fingerprint;
  report.strict = opt.gate.strict;
  report.shard_index = opt.selection.shard_index;
  report.shard_count = opt.selection.shard_count;
  report.shards_total = static_cast<int64_t>(expanded->size());
  report.shard_list_sha256 = sg::shard_list_sha256(*expanded);
  int level = opt.log.level();
  if (shards.empty()) std::cout << opt.selection.empty_note(expanded->size()) << "\n";
  sg::cli::Progress progress(std::cerr, static_cast<int64_t>(shards.size()), level,
                             sg::cli::stderr_is_terminal());
  for (const std::string& path : shards) {
    sg::ShardCheckOptions options = base;
    options.fingerprint = !opt.no_fingerprint;
    if (opt.min_residency) {
      options.threshold = sg::ResidencyThreshold{*opt.min_residency, "--min-residency", ""};
    } else {
      options.threshold = policy->threshold_for(path);
    }
    if (auto it = plans->find(path); it != plans->end()) {
      options.plan_path = it->second.path;
      options.plan = it->second.dump;
      options.shard = it->second.shard;
    }
    sg::ShardCheck check = sg::check_shard(path, options);
    bool ok = !check.error && check.verdict.passed;
    progress.finish();  // the shard's lines go where the live line was
    if (level >= 0 || !ok) {
      std::cout << sg::residency_summary_line(check) << "\n";
      // The dump a plan-based verdict rests on, and what it was matched against.
      if (!check.error && !check.plan_path.empty()) {
        std::cout << "      " << sg::residency_plan_line(check) << "\n";
      }
      std::cout << sg::residency_failure_lines(check);
      if (level >= 1 && !check.error) {
        // As the reports say it: a report naming no build must not read as one that forgot.
        std::cout << "      fingerprint "
                  << (opt.no_fingerprint ? std::string("not computed (--no-fingerprint)") : check.fingerprint)
                  << "\n";
      }
      if (level >= 1 && !check.threshold.reason.empty()) {
        std::cout << "      threshold from " << check.threshold.origin << ": "
                  << check.threshold.reason << "\n";
      }
    }
    if (opt.ops && !check.error) std::cout << sg::residency_op_table(check);
    std::cout.flush();
    progress.done("shard " + sg::path_basename(path), sg::shard_verdict(check));
    report.shards.push_back(std::move(check));
  }
  progress.finish();
  int code = sg::residency_exit_code(report);

  if (auto s = opt.report.write(report); !s) {
    std::cerr << kTool << ": " << s.to_string() << "\n";
    code = std::max(code, sg::kExitBadInput);
  }
  const sg::ResidencyCounts counts = sg::residency_counts(report);
  std::cout << fmt::format("{}: {} shard(s): {}, {} failed, {} error(s) -> exit {}\n", kTool,
                           counts.shards, sg::residency_passed_text(counts), counts.failed,
                           counts.errors, code);
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
