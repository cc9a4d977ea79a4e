// golden-validator's own argument groups and the report emission every subcommand shares
// (golden_args.h).
#include "common/golden_args.h"

#include "common/gate_lookup.h"

#include "shardgate/culprit_report.h"
#include "shardgate/io.h"
#include "shardgate/report_output.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>

namespace sg::cli {
namespace {

Result<double> parse_double(const std::string& text, const std::string& flag) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  SG_CHECK(!text.empty() && end && *end == '\0' && std::isfinite(v), ErrorCode::kUsage,
           "{} {}: expected a finite number", flag, text);
  return v;
}

// VALUE (or LO,HI for the norm ratio; "none" switches the gate off) into a Threshold.
Result<Threshold> parse_threshold(Metric m, const std::string& value, const std::string& flag,
                                  const std::string& whole) {
  Threshold t;
  t.origin = flag;
  t.reason = "command line: " + flag + " " + whole;
  if (value == "none") return t;
  if (m == Metric::kNormRatio) {
    const size_t comma = value.find(',');
    SG_CHECK(comma != std::string::npos, ErrorCode::kUsage, "{} {}: expected LO,HI", flag, whole);
    SG_ASSIGN_OR_RETURN(double lo, parse_double(value.substr(0, comma), flag));
    SG_ASSIGN_OR_RETURN(double hi, parse_double(value.substr(comma + 1), flag));
    SG_CHECK(lo >= 0 && lo <= hi, ErrorCode::kUsage, "{} {}: expected 0 <= LO <= HI", flag, whole);
    t.bound = lo;
    t.upper = hi;
    return t;
  }
  SG_ASSIGN_OR_RETURN(double v, parse_double(value, flag));
  // A bound outside the metric's range would pass or fail everything silently.
  if (auto range = threshold_out_of_range(m, v)) {
    return make_error(ErrorCode::kUsage, "{} {}: out of range ({})", flag, whole, *range);
  }
  t.bound = v;
  return t;
}

bool use_color() {
  if (std::getenv("NO_COLOR") != nullptr) return false;
  return isatty(fileno(stdout)) != 0;
}

}  // namespace

void ThresholdArgs::add_to(CLI::App& app) {
  for (const MetricInfo& m : metric_table()) {
    app.add_option(m.flag, by_metric[static_cast<size_t>(m.metric)], m.help)
        ->option_text("[NAME:]VALUE ...")
        ->expected(1, 1 << 20)
        ->group("Thresholds");
  }
  app.add_option("--percentile", percentile,
                 "Gate on percentile pN of each metric over positions instead of the minimum "
                 "(N in [0, 50): 'p5' or '5'; 'min' = the minimum)")
      ->option_text("N")
      ->group("Thresholds");
}

bool ThresholdArgs::any() const {
  for (const std::vector<std::string>& given : by_metric) {
    if (!given.empty()) return true;
  }
  return !percentile.empty();
}

Status ThresholdArgs::apply(GatePolicy& policy) const {
  for (const MetricInfo& o : metric_table()) {
    for (const std::string& arg : by_metric[static_cast<size_t>(o.metric)]) {
      // NAME:VALUE splits at the last ':' so checkpoint globs keep their own characters.
      const size_t colon = arg.rfind(':');
      if (colon == std::string::npos) {
        SG_ASSIGN_OR_RETURN(Threshold t, parse_threshold(o.metric, arg, o.flag, arg));
        if (t.bound) {
          policy.defaults.at(o.metric) = t;
        } else {
          policy.defaults.at(o.metric).reset();
        }
        continue;
      }
      const std::string name = arg.substr(0, colon);
      SG_CHECK(!name.empty(), ErrorCode::kUsage, "{} {}: empty checkpoint name before ':'", o.flag, arg);
      SG_ASSIGN_OR_RETURN(Threshold t, parse_threshold(o.metric, arg.substr(colon + 1), o.flag, arg));
      GateOverride ov;
      ov.match.checkpoint = name;
      ov.reason = t.reason;
      ov.origin = "command line";
      t.origin = "command line";
      ov.thresholds.at(o.metric) = t;
      policy.overrides.push_back(std::move(ov));
    }
  }
  if (!percentile.empty()) {
    double p = 0;
    if (percentile != "min") {
      const std::string digits = percentile[0] == 'p' ? percentile.substr(1) : percentile;
      SG_ASSIGN_OR_RETURN(p, parse_double(digits, "--percentile"));
      SG_CHECK(p >= 0 && p < 50, ErrorCode::kUsage,
               "--percentile {}: must be in [0, 50) (the bad end of each metric is gated)",
               percentile);
    }
    policy.defaults.percentile = p;
    policy.defaults.percentile_reason = "command line: --percentile " + percentile;
  }
  if (any()) policy.adjusted_on_command_line = true;
  return Status::ok();
}

void MetricArgs::add_to(CLI::App& app) {
  app.add_option("--topk", topk, "k of the top-k overlap of logits (default: the policy's, else 5)")
      ->option_text("K")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
}

MetricOptions MetricArgs::options(const GatePolicy& policy) const {
  return policy_metric_options(policy, topk);
}

void GoldenOutputArgs::add_to(CLI::App& app) {
  app.add_flag("--all-positions", all_positions, "List every position of every check in the table");
  app.add_flag("--no-color", no_color, "No ANSI colours in the table");
}

void GoldenInputArgs::add_to(CLI::App& app) {
  app.add_option("--position-axis", position_axis,
                 "Position axis of .safetensors tensors that carry no position metadata (N, or "
                 "'none': the whole tensor is one row); without it such references are refused")
      ->option_text("N|none");
}

Result<GoldenOpenOptions> GoldenInputArgs::options() const {
  GoldenOpenOptions o;
  if (position_axis.empty()) return o;
  o.position_axis_given = true;
  if (position_axis == "none") return o;
  SG_ASSIGN_OR_RETURN(double v, parse_double(position_axis, "--position-axis"));
  SG_CHECK(v >= 0 && v == static_cast<double>(static_cast<int64_t>(v)), ErrorCode::kUsage,
           "--position-axis {}: expected a non-negative integer or 'none'", position_axis);
  o.position_axis = static_cast<int64_t>(v);
  return o;
}

void GoldenCommonArgs::add_to(CLI::App& app, std::initializer_list<ReportFormat> without) {
  reports.add_to(app, without);
  gate.add_to(app, kGoldenStrictHelp);
  log.add_to(app);
  thresholds.add_to(app);
  metrics.add_to(app);
  output.add_to(app);
}

void BaselineArgs::add_to(CLI::App& app) {
  app.add_option("--baseline", baseline, "The FP16 baseline shard (one candidate)")
      ->option_text("SHARD");
  app.add_option("--baseline-replace", replace,
                 "Baseline of each candidate: its path with the last OLD replaced by NEW, e.g. "
                 "_lut4=_fp16")
      ->option_text("OLD=NEW");
}

Status BaselineArgs::validate(size_t candidates, bool required) const {
  SG_CHECK(baseline.empty() || replace.empty(), ErrorCode::kUsage,
           "give one of --baseline SHARD and --baseline-replace OLD=NEW, not both");
  SG_CHECK(!required || !baseline.empty() || !replace.empty(), ErrorCode::kUsage,
           "give one of --baseline SHARD and --baseline-replace OLD=NEW");
  SG_CHECK(baseline.empty() || candidates <= 1, ErrorCode::kUsage,
           "--baseline names one shard but {} candidates were given; use --baseline-replace",
           candidates);
  const size_t eq = replace.find('=');
  SG_CHECK(replace.empty() || (eq != std::string::npos && eq > 0), ErrorCode::kUsage,
           "--baseline-replace {}: expected OLD=NEW", replace);
  return Status::ok();
}

Result<std::string> BaselineArgs::baseline_of(const std::string& candidate) const {
  if (!baseline.empty() || replace.empty()) return baseline;
  const size_t eq = replace.find('=');
  const std::string from = replace.substr(0, eq);
  const std::string to = replace.substr(eq + 1);
  const size_t at = candidate.rfind(from);
  SG_CHECK(at != std::string::npos, ErrorCode::kUsage,
           "--baseline-replace {}: '{}' does not occur in candidate {}", replace, from, candidate);
  return candidate.substr(0, at) + to + candidate.substr(at + from.size());
}

Result<std::string> BaselineArgs::step_baseline_of(const std::string& shard) const {
  SG_CHECK(!replace.empty(), ErrorCode::kUsage,
           "no baseline known for {} (--baseline names one shard; use --baseline-replace)", shard);
  return baseline_of(shard);
}

Result<GatePolicy> build_gate_policy(const GateArgs& gate, const ThresholdArgs& thresholds,
                                     const std::vector<std::string>& anchors) {
  GatePolicy policy = builtin_gate_policy();
  // Same precedence as ane-validator: --gate, else the gates/fidelity.json that governs the
  // work (found upward from it), else the built-in defaults. The report names the source.
  std::string file = gate.gate_file;
  if (file.empty()) {
    SG_ASSIGN_OR_RETURN(file, find_gate_file(anchors, kDefaultFidelityGate));
  }
  if (!file.empty()) {
    SG_ASSIGN_OR_RETURN(policy, load_gate_policy(file));
  }
  SG_TRY(thresholds.apply(policy));
  return policy;
}

Result<GatePolicy> build_gate_policy(const GoldenCommonArgs& args,
                                     const std::vector<std::string>& anchors) {
  SG_ASSIGN_OR_RETURN(GatePolicy policy, build_gate_policy(args.gate, args.thresholds, anchors));
  if (args.metrics.topk > 0) policy.topk = args.metrics.topk;
  return policy;
}

int finish_golden_report(FidelityRun run, GatePolicy policy, const GoldenCommonArgs& args,
                         const std::function<Status(GoldenReport&)>& amend) {
  const std::string command = run.command;
  auto report = make_golden_report(std::move(run), std::move(policy), args.gate.strict,
                                   kGoldenValidatorVersion);
  if (!report) return report_error(report.status(), command, args);
  report->command_line = command_line();
  if (amend) {
    if (Status s = amend(*report); !s.is_ok()) return report_error(s, command, args);
  }
  return emit_golden_report(*report, args.reports, args.output, args.log);
}

int report_error(const Status& status) {
  std::cerr << "golden-validator: " << error_code_name(status.code()) << ": " << status.message()
            << "\n";
  return exit_code(status.code());
}

int report_error(const Status& status, const std::string& command, const GoldenCommonArgs& args) {
  GoldenReport report = golden_error_report(command, status, kGoldenValidatorVersion);
  report.command_line = command_line();
  if (Status s = args.reports.write(report); !s.is_ok()) report_error(s);
  return report_error(status);
}

int emit_golden_report(const GoldenReport& report, const ReportArgs& reports,
                       const GoldenOutputArgs& output, const LogArgs& log) {
  if (Status s = reports.write(report); !s.is_ok()) return report_error(s);
  if (log.level() < 0) {
    std::cout << (is_empty_slice(report)                               ? "EMPTY SLICE: "
                  : report.evaluation.summary.verdict == Verdict::kPass ? "PASS: "
                                                                         : "FAIL: ")
              << report.evaluation.summary.message << "\n";
  } else {
    TableOptions t;
    t.color = !output.no_color && use_color();
    t.all_positions = output.all_positions || log.level() > 0;
    t.list_shards = log.level() > 0;
    std::cout << golden_report_table(report, t);
    if (report.culprits) std::cout << "\n" << culprit_report_table(*report.culprits, 10, log.level() > 0);
    if (!report.culprits_note.empty()) std::cout << "\n" << report.culprits_note << "\n";
  }
  return report_exit_code(report);
}

}  // namespace sg::cli
