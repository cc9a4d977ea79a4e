// ane-validator reports. The JSON key order is fixed (ordered_json, insertion order) so two
// runs of the same inputs give byte-identical reports.
#include "shardgate/residency_report.h"

#include "report/envelope_json.h"
#include "report/escape.h"
#include "shardgate/io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace sg {
namespace {

using ojson = nlohmann::ordered_json;

ojson optional_number(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

ojson summary_json(const ResidencySummary& s) {
  ojson j;
  j["total_ops"] = s.total_ops;
  j["compile_time_ops"] = s.compile_time_ops;
  j["compute_ops"] = s.compute_ops;
  j["on_ane"] = s.on_ane;
  j["at_risk"] = s.at_risk;
  j["fallbacks"] = s.fallbacks;
  j["unknown"] = s.unknown;
  j["residency_scope"] = "body";  // residency, band, cost share: boundary casts counted apart
  j["residency_pct"] = optional_number(s.residency_pct);
  j["cost_weighted_pct"] = optional_number(s.cost_weighted_pct);
  j["costed_ops"] = s.costed_ops;
  j["residency_low_pct"] = optional_number(s.residency_low_pct);
  j["body_ops"] = s.body_ops;
  j["body_ane"] = s.body_ane;
  j["body_at_risk"] = s.body_at_risk;
  j["body_off_ane"] = s.body_off_ane;
  j["boundary_casts"] = s.boundary_casts;
  j["boundary_casts_not_ane"] = s.boundary_casts_not_ane;
  return j;
}

// A rule's confidence and source by id ("" for an unknown id, e.g. a plan-only row).
std::string rule_confidence(const std::string& id) {
  const RuleInfo* r = find_rule(id);
  return r ? confidence_name(r->confidence) : "";
}
std::string rule_source(const std::string& id) {
  const RuleInfo* r = find_rule(id);
  return r ? std::string(r->source) : "";
}

ojson op_json(const OpPlacement& op) {
  ojson j;
  j["function"] = op.function;
  j["block_path"] = op.block_path;
  j["index"] = op.index;
  j["line"] = op.line;
  j["type"] = op.type;
  j["outputs"] = op.outputs;
  j["dtype"] = op.dtype;
  j["shape"] = op.shape_known ? ojson(op.shape) : ojson(nullptr);
  j["class"] = op_class_name(op.op_class);
  j["placement"] = placement_name(op.placement);
  j["source"] = placement_source_name(op.source);
  j["preferred"] = op.preferred.empty() ? ojson(nullptr) : ojson(op.preferred);
  j["supported"] = op.supported;
  j["cost"] = optional_number(op.cost);
  j["predicted"] = placement_name(op.predicted);
  j["rule"] = op.rule_id;
  j["reason"] = op.reason;
  j["detail"] = op.detail;
  j["rule_confidence"] = rule_confidence(op.rule_id);
  j["rule_source"] = rule_source(op.rule_id);
  j["overlay_rule"] = op.overlay_rule.empty() ? ojson(nullptr) : ojson(op.overlay_rule);
  j["overlay_detail"] = op.overlay_detail;
  j["boundary_cast"] = op.boundary_cast;
  return j;
}

}  // namespace

std::vector<RuleUse> rules_used(const ShardCheck& s) {
  std::vector<RuleUse> uses;
  auto count = [&](const std::string& id) {
    if (id.empty()) return;
    for (RuleUse& u : uses) {
      if (u.id == id) {
        ++u.ops;
        return;
      }
    }
    uses.push_back(RuleUse{id, 1});
  };
  for (const OpPlacement& op : s.ops) {
    count(op.rule_id);
    count(op.overlay_rule);
  }
  return uses;
}

namespace {

// name: the shard's path end that no other shard of the report shares (distinct_path_tails).
ojson shard_json(const ShardCheck& s, const std::string& name) {
  ojson j;
  j["path"] = s.path;
  j["name"] = name;
  j["form"] = s.form.empty() ? ojson(nullptr) : ojson(s.form);
  j["program_sha256"] = s.program_sha256.empty() ? ojson(nullptr) : ojson(s.program_sha256);
  j["fingerprint"] = s.fingerprint.empty() ? ojson(nullptr) : ojson(s.fingerprint);
  j["verdict"] = shard_verdict(s);
  j["model_verdict"] = s.error ? ojson(nullptr) : ojson(model_verdict_name(s.model_verdict));
  j["shard_failures"] = s.shard_failures;
  if (s.error) {
    j["error"] = ojson{{"code", error_code_name(s.error->code())}, {"message", s.error->message()}};
  } else {
    j["error"] = nullptr;
  }
  j["placement_source"] = placement_source_name(s.source);
  j["plan"] = s.plan_path.empty() ? ojson(nullptr) : ojson(s.plan_path);
  j["plan_sha256"] = s.plan_sha256.empty() ? ojson(nullptr) : ojson(s.plan_sha256);
  j["plan_matched_by"] = s.plan_matched_by.empty() ? ojson(nullptr) : ojson(s.plan_matched_by);
  j["plan_taken_on"] = s.plan_taken_on.empty() ? ojson(nullptr) : ojson(s.plan_taken_on);
  j["summary"] = summary_json(s.summary);
  ojson gate;
  gate["min_residency_pct"] = s.threshold.min_residency_pct;
  gate["origin"] = s.threshold.origin;
  gate["reason"] = s.threshold.reason;
  gate["strict"] = s.strict;
  gate["passed"] = !s.error && s.verdict.passed;
  gate["failures"] = s.verdict.failures;
  j["gate"] = gate;
  ojson checks = ojson::array();
  for (const ContractCheckResult& c : s.checks) {
    checks.push_back(ojson{{"name", c.name},
                           {"spec", c.spec},
                           {"passed", c.passed},
                           {"detail", c.detail},
                           {"offenders", c.offenders}});
  }
  j["checks"] = checks;
  j["plan_failures"] = s.plan_failures;
  ojson rules = ojson::array();
  for (const RuleUse& u : rules_used(s)) {
    const RuleInfo* r = find_rule(u.id);
    rules.push_back(ojson{{"id", u.id},
                          {"ops", u.ops},
                          {"placement", r ? placement_name(r->placement) : ""},
                          {"confidence", r ? confidence_name(r->confidence) : ""},
                          {"source", r ? std::string(r->source) : ""},
                          {"reason", r ? std::string(r->reason) : ""}});
  }
  j["rules"] = rules;
  ojson ops = ojson::array();
  for (const OpPlacement& op : s.ops) ops.push_back(op_json(op));
  j["ops"] = ops;
  return j;
}



// The first 12 hex digits: enough to tell two dumps apart at a glance; JSON has the whole hash.
std::string short_sha(const std::string& sha256) {
  return sha256.empty() ? std::string("n/a") : sha256.substr(0, 12);
}

std::string pct_str(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}%", *v) : std::string("n/a");
}

// The shard's fingerprint, or why there is none.
std::string fingerprint_str(const ResidencyReport& report, const ShardCheck& s) {
  if (!s.fingerprint.empty()) return s.fingerprint;
  if (s.error) return "n/a (shard not read)";
  return report.fingerprinted ? "n/a" : "not computed (--no-fingerprint)";
}

std::string gate_file_str(const ResidencyReport& report) {
  if (report.gate_file.empty()) return "built-in default";
  return fmt::format("{} (sha256 {})", report.gate_file,
                     report.gate_file_sha256.empty() ? "n/a" : report.gate_file_sha256);
}

// Which build was judged, against which gate file and plan dump (JUnit system-out).
std::string build_line(const ResidencyReport& report, const ShardCheck& s) {
  std::string line = fmt::format("fingerprint {}; program sha256 {}; gate file {}",
                                 fingerprint_str(report, s),
                                 s.program_sha256.empty() ? "n/a" : s.program_sha256,
                                 gate_file_str(report));
  if (!s.plan_path.empty()) line += "; " + residency_plan_line(s);
  return line;
}

// "cost-weighted 100.0% of the 38 costed ops (4 of 42 without a cost)": a dump may leave an
// op's cost null, and a share over the costed ops alone must not read as the whole body's.
std::string cost_weighted_str(const ResidencySummary& m) {
  std::string out = fmt::format("cost-weighted {} of the {} costed ops",
                                pct_str(m.cost_weighted_pct), m.costed_ops);
  if (m.costed_ops < m.body_ops) {
    out += fmt::format(" ({} of {} without a cost)", m.body_ops - m.costed_ops, m.body_ops);
  }
  return out;
}

// "72.9-85.4%": sure ANE share .. ANE + at-risk share.
std::string band_str(const ResidencySummary& m) {
  if (!m.residency_pct || !m.residency_low_pct) return "n/a";
  return fmt::format("{:.1f}-{:.1f}%", *m.residency_low_pct, *m.residency_pct);
}

}  // namespace

std::vector<std::string> shard_paths(const ResidencyReport& report) {
  std::vector<std::string> out;
  for (const ShardCheck& s : report.shards) out.push_back(s.path);
  return out;
}

const char* shard_verdict(const ShardCheck& shard) {
  if (shard.error) return "error";
  return shard.verdict.passed ? "pass" : "fail";
}

const char* residency_verdict_name(int exit_code) {
  return exit_code == kExitPass ? "pass" : exit_code == kExitGateFailed ? "fail" : "error";
}

ResidencyCounts residency_counts(const ResidencyReport& report) {
  ResidencyCounts c;
  c.shards = static_cast<int64_t>(report.shards.size());
  for (const ShardCheck& s : report.shards) {
    if (s.error) {
      ++c.errors;
    } else if (s.verdict.passed) {
      ++c.passed;
      if (s.model_verdict == ModelVerdict::kAtRisk) ++c.passed_at_risk;
    } else {
      ++c.failed;
    }
  }
  return c;
}

std::string residency_passed_text(const ResidencyCounts& counts) {
  if (counts.passed_at_risk == 0) return fmt::format("{} passed", counts.passed);
  return fmt::format("{} passed ({} of them at risk: --strict fails them)", counts.passed,
                     counts.passed_at_risk);
}

std::string shard_list_sha256(const std::vector<std::string>& paths) {
  std::string joined;
  for (const std::string& p : paths) joined += p + "\n";
  return sha256_hex(std::as_bytes(std::span<const char>(joined.data(), joined.size())));
}

bool residency_empty_slice(const ResidencyReport& report) {
  return report.shards.empty() && report.shard_count > 1 && report.shards_total > 0;
}

std::string residency_empty_note(const ResidencyReport& report) {
  return fmt::format("slice {} of {} selects none of the {} shards: nothing to check in this job",
                     report.shard_index, report.shard_count, report.shards_total);
}

std::string residency_report_verdict(const ResidencyReport& report) {
  if (residency_empty_slice(report)) return "empty-slice";
  return residency_verdict_name(residency_exit_code(report));
}

int residency_exit_code(const ResidencyReport& report) {
  if (residency_empty_slice(report)) return kExitPass;
  if (report.shards.empty()) return kExitBadInput;
  bool failed = false;
  for (const ShardCheck& s : report.shards) {
    if (s.error) return s.error->code() == ErrorCode::kInternal ? kExitInternal : kExitBadInput;
    if (!s.verdict.passed) failed = true;
  }
  return failed ? kExitGateFailed : kExitPass;
}

std::string residency_summary_json(const ResidencySummary& summary) {
  return summary_json(summary).dump();
}

ReportEnvelope residency_report_envelope(const ResidencyReport& report) {
  ReportEnvelope e = make_report_envelope(kResidencyReportKind, kResidencyReportVersion, report.tool,
                                          report.tool_version, report.command, report.command_line);
  e.exit_code = residency_exit_code(report);
  e.verdict = residency_report_verdict(report);
  if (!report.gate_file.empty()) {
    e.provenance.gate = ReportInput{"gate", report.gate_file, report.gate_file_sha256};
  }
  e.provenance.inputs = report.inputs;
  for (const ShardCheck& s : report.shards) {
    // One dump may serve several shards (--plan-dir with both forms): listed once.
    const ReportInput plan{"plan", s.plan_path, s.plan_sha256};
    const bool listed = std::any_of(e.provenance.inputs.begin(), e.provenance.inputs.end(),
                                    [&](const ReportInput& in) {
                                      return in.role == plan.role && in.path == plan.path &&
                                             in.sha256 == plan.sha256;
                                    });
    if (!s.plan_path.empty() && !listed) e.provenance.inputs.push_back(plan);
    e.provenance.shards.push_back({"", s.path, s.fingerprint});
  }
  return e;
}

std::string residency_report_json(const ResidencyReport& report) {
  ojson j = envelope_json(residency_report_envelope(report));
  j["fingerprinted"] = report.fingerprinted;
  j["strict"] = report.strict;
  j["selection"] = ojson{{"shard_index", report.shard_index},
                         {"shard_count", report.shard_count},
                         {"shards_total", report.shards_total},
                         {"shard_list_sha256", report.shard_list_sha256}};
  if (residency_empty_slice(report)) j["note"] = residency_empty_note(report);
  const ResidencyCounts counts = residency_counts(report);
  j["counts"] = ojson{{"shards", counts.shards},
                      {"passed", counts.passed},
                      {"failed", counts.failed},
                      {"errors", counts.errors}};
  ojson shards = ojson::array();
  const std::vector<std::string> names = distinct_path_tails(shard_paths(report));
  for (size_t i = 0; i < report.shards.size(); ++i) shards.push_back(shard_json(report.shards[i], names[i]));
  j["shards"] = shards;
  return json_util::file_text(j);
}

std::string residency_report_junit(const ResidencyReport& report) {
  const ResidencyCounts counts = residency_counts(report);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (residency_empty_slice(report)) {
    // Nothing selected in this CI job: one skipped case saying so, never a failure or a pass.
    out += fmt::format("<testsuites name=\"{0}\" tests=\"1\" failures=\"0\" errors=\"0\">\n"
                       "  <testsuite name=\"{0}.{4}\" tests=\"1\" failures=\"0\" errors=\"0\" "
                       "skipped=\"1\">\n    <testcase classname=\"{0}.{4}\" name=\"slice {1} of "
                       "{2}\">\n      <skipped message=\"{3}\"/>\n    </testcase>\n  </testsuite>\n"
                       "</testsuites>\n",
                       xml_escape(report.tool), report.shard_index, report.shard_count,
                       xml_escape(residency_empty_note(report)), xml_escape(report.command));
    return out;
  }
  out += fmt::format("<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                     xml_escape(report.tool), counts.shards, counts.failed, counts.errors);
  // Suites and test ids as golden-validator names them: <tool>.<command>; each shard's path is
  // its test case, so the ids of two shards (or two jobs' shards) never collide.
  const std::string suite = xml_escape(report.tool + "." + report.command);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                     suite, counts.shards, counts.failed, counts.errors);
  for (const ShardCheck& s : report.shards) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", suite, xml_escape(s.path));
    if (!s.plan_path.empty()) {
      // The evidence of a plan-based verdict, by the property names golden-validator gives
      // its inputs (role, role.sha256).
      out += fmt::format("      <properties>\n        <property name=\"plan\" value=\"{}\"/>\n"
                         "        <property name=\"plan.sha256\" value=\"{}\"/>\n"
                         "        <property name=\"plan.matched_by\" value=\"{}\"/>\n"
                         "        <property name=\"plan.taken_on\" value=\"{}\"/>\n"
                         "      </properties>\n",
                         xml_escape(s.plan_path), xml_escape(s.plan_sha256),
                         xml_escape(s.plan_matched_by), xml_escape(s.plan_taken_on));
    }
    if (s.error) {
      out += fmt::format("      <error message=\"{}\">{}</error>\n",
                         xml_escape(error_code_name(s.error->code())),
                         xml_escape(s.error->message()));
    } else if (!s.verdict.passed) {
      std::string body;
      for (const std::string& f : s.verdict.failures) body += f + "\n";
      out += fmt::format("      <failure message=\"{}\">{}</failure>\n",
                         xml_escape(s.verdict.failures.empty() ? "" : s.verdict.failures[0]),
                         xml_escape(body));
    }
    std::string system_out = residency_summary_line(s) + "\n" + build_line(report, s) + "\n";
    for (const RuleUse& u : rules_used(s)) {
      const RuleInfo* r = find_rule(u.id);
      system_out += fmt::format("rule {} x{}: {} (confidence {}; source: {})\n", u.id, u.ops,
                                r ? placement_name(r->placement) : "", r ? confidence_name(r->confidence) : "",
                                r ? std::string(r->source) : "");
    }
    out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(system_out));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string residency_report_markdown(const ResidencyReport& report) {
  std::string out = fmt::format("## {}: {}\n\n", report.tool, residency_report_verdict(report));
  if (residency_empty_slice(report)) return out + residency_empty_note(report) + "\n";
  out += "| shard | verdict | compute | on ANE | at risk | fallback | unknown | compile-time | "
         "body ops | residency (body) | min | source |\n";
  out += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  // Each shard by the end of its path no other shard shares (layers/07/model.mlpackage when
  // every layer's file is model.mlpackage), so no two rows read alike.
  const std::vector<std::string> names = distinct_path_tails(shard_paths(report));
  auto tail = [&](const ShardCheck& s) -> const std::string& {
    return names[static_cast<size_t>(&s - report.shards.data())];
  };
  auto name = [&](const ShardCheck& s) { return md_escape(tail(s)); };
  for (const ShardCheck& s : report.shards) {
    const ResidencySummary& m = s.summary;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:g}% | {} |\n",
                       name(s), shard_verdict(s), m.compute_ops, m.on_ane,
                       m.at_risk, m.fallbacks, m.unknown, m.compile_time_ops, m.body_ops,
                       pct_str(m.residency_pct), s.threshold.min_residency_pct,
                       placement_source_name(s.source));
  }
  out += "\n| shard | model verdict | ANE | at risk | off ANE | boundary casts (apart) | "
         "residency band (body) | shard-level |\n|---|---|---:|---:|---:|---:|---|---|\n";
  for (const ShardCheck& s : report.shards) {
    if (s.error) continue;
    const ResidencySummary& m = s.summary;
    std::string limits;
    for (const std::string& f : s.shard_failures) limits += (limits.empty() ? "" : "; ") + f;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", name(s),
                       model_verdict_name(s.model_verdict), m.body_ane, m.body_at_risk,
                       m.body_off_ane, m.boundary_casts, band_str(m), md_escape(limits));
  }
  out += fmt::format("\n| shard | fingerprint | program sha256 |\n|---|---|---|\n");
  for (const ShardCheck& s : report.shards) {
    out += fmt::format("| {} | {} | {} |\n", name(s),
                       fingerprint_str(report, s),
                       s.program_sha256.empty() ? "n/a" : s.program_sha256);
  }
  bool costs = false;
  for (const ShardCheck& s : report.shards) {
    if (s.error || !s.summary.cost_weighted_pct) continue;
    if (!costs) out += "\n| shard | cost-weighted residency (body) |\n|---|---|\n";
    costs = true;
    out += fmt::format("| {} | {} |\n", name(s), cost_weighted_str(s.summary));
  }
  out += fmt::format("\nGate file: {}\n", gate_file_str(report));
  bool plans = false;
  for (const ShardCheck& s : report.shards) {
    if (s.plan_path.empty()) continue;
    if (!plans) {
      out += "\n| shard | plan dump | sha256 | matched by | taken with |\n|---|---|---|---|---|\n";
    }
    plans = true;
    out += fmt::format("| {} | {} | {} | {} | {} |\n", name(s), md_code(s.plan_path, true),
                       short_sha(s.plan_sha256), md_escape(s.plan_matched_by),
                       md_escape(s.plan_taken_on));
  }
  for (const ShardCheck& s : report.shards) {
    if (s.error) continue;
    out += fmt::format("\n### Rules applied: {}\n\n| rule | ops | placement | confidence | source |\n"
                       "|---|---:|---|---|---|\n",
                       name(s));
    for (const RuleUse& u : rules_used(s)) {
      const RuleInfo* r = find_rule(u.id);
      out += fmt::format("| {} | {} | {} | {} | {} |\n", u.id, u.ops,
                         r ? placement_name(r->placement) : "", r ? confidence_name(r->confidence) : "",
                         r ? md_escape(std::string(r->source)) : "");
    }
  }
  bool any = false;
  for (const ShardCheck& s : report.shards) {
    if (s.error || !s.verdict.passed) {
      if (!any) out += "\n### Failures\n\n";
      any = true;
      if (s.error) out += fmt::format("- {}: {}\n", md_code(s.path), md_escape(s.error->message()));
      for (const std::string& f : s.verdict.failures) {
        out += fmt::format("- {}: {}\n", md_code(tail(s)), md_escape(f));
      }
    }
  }
  return out;
}

std::string residency_summary_line(const ShardCheck& s) {
  if (s.error) return fmt::format("ERROR {}", s.path);
  const ResidencySummary& m = s.summary;
  std::string cost = m.cost_weighted_pct ? ", " + cost_weighted_str(m) : std::string();
  std::string limits;
  for (const std::string& f : s.shard_failures) limits += f + "; ";
  return fmt::format(
      "{:<5} {}  {}model {} (body: ANE {}, at risk {}, off ANE {}; boundary casts {} apart, "
      "{} not on ANE), compute {}, on ANE {}, at risk {}, compile-time {}, fallbacks {}, "
      "unknown {}, residency {} of {} body ops{} (min {:g}%), band {}, {}",
      s.verdict.passed ? "PASS" : "FAIL", s.path, limits, model_verdict_name(s.model_verdict),
      m.body_ane, m.body_at_risk, m.body_off_ane, m.boundary_casts, m.boundary_casts_not_ane,
      m.compute_ops, m.on_ane, m.at_risk, m.compile_time_ops, m.fallbacks, m.unknown,
      pct_str(m.residency_pct), m.body_ops, cost, s.threshold.min_residency_pct, band_str(m),
      placement_source_name(s.source));
}

std::string residency_plan_line(const ShardCheck& s) {
  std::string line = fmt::format("plan {} (sha256 {}), matched by {}", s.plan_path,
                                 short_sha(s.plan_sha256),
                                 s.plan_matched_by.empty() ? "n/a" : s.plan_matched_by);
  if (!s.plan_taken_on.empty()) line += ", taken with " + s.plan_taken_on;
  return line;
}

std::string residency_failure_lines(const ShardCheck& s) {
  std::string out;
  // "i/o error: ...": every error message starts with its category.
  if (s.error) out += "      " + s.error->to_string() + "\n";
  if (!s.error) {
    for (const std::string& f : s.verdict.failures) out += "      " + f + "\n";
  }
  return out;
}

std::string residency_op_table(const ShardCheck& s) {
  std::vector<std::array<std::string, 11>> rows;
  rows.push_back({"function", "block", "#", "type", "output", "dtype/shape", "class", "placement",
                  "rule", "conf", "reason / detail"});
  for (const OpPlacement& op : s.ops) {
    std::string ty = op.dtype + (op.shape_known ? " " + shape_str(op.shape) : std::string());
    std::string placement = placement_name(op.placement);
    if (op.source == PlacementSource::kPlan) {
      placement += op.preferred.empty() ? " (plan: none)" : " (plan: " + op.preferred + ")";
    }
    std::string why = op.detail.empty() ? op.reason : op.reason + ": " + op.detail;
    std::string rule = op.rule_id;
    std::string conf = rule_confidence(op.rule_id);
    if (!op.overlay_rule.empty()) {
      rule += "+" + op.overlay_rule;
      conf += "+" + rule_confidence(op.overlay_rule);
      why += "; " + op.overlay_rule + ": " + op.overlay_detail;
    }
    if (op.boundary_cast) why += " [boundary cast, counted apart]";
    rows.push_back({op.function, block_path_str(op.block_path), std::to_string(op.index), op.type,
                    op.outputs.empty() ? "" : op.outputs[0], ty, op_class_name(op.op_class),
                    placement, rule, conf, why});
  }
  std::array<size_t, 11> width{};
  for (const auto& r : rows) {
    for (size_t c = 0; c + 1 < r.size(); ++c) width[c] = std::max(width[c], std::min<size_t>(r[c].size(), 48));
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < r.size(); ++c) {
      std::string cell = r[c];
      if (c + 1 < r.size()) {
        if (cell.size() > 48) cell = cell.substr(0, 45) + "...";
        cell.resize(width[c], ' ');
        line += cell + "  ";
      } else {
        line += cell;
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += "  rules (confidence: A Apple, A* Apple Core AI, U user measurement, F folklore):\n";
  for (const RuleUse& u : rules_used(s)) {
    const RuleInfo* r = find_rule(u.id);
    if (!r) continue;
    out += fmt::format("    {:<7} x{:<4} {:<10} {:<2} {}\n", u.id, u.ops, placement_name(r->placement),
                       confidence_name(r->confidence), r->source);
  }
  return out;
}

}  // namespace sg
