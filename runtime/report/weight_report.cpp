// The weight-diagnostics report forms (weight_report.h).
#include "shardgate/weight_report.h"
#include "report/envelope_json.h"

#include "report/escape.h"
#include "report/report_numbers.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace sg {
namespace {

using report_numbers::text;

std::string flag_ids(const WeightDiagnostic& w) {
  std::string s;
  for (const WeightFlag& f : w.flags) s += (s.empty() ? "" : ",") + f.id;
  return s.empty() ? "-" : s;
}

nlohmann::ordered_json weight_json(const WeightDiagnostic& w) {
  nlohmann::ordered_json j = {
      {"function", w.function},
      {"name", w.name},
      {"op_type", w.op_type},
      {"key", w.key},
      {"consumer_type", w.consumer_type},
      {"form", w.form},
      {"shape", w.shape},
      {"elements", w.elements},
      {"groups", w.groups},
      {"group_elements", w.group_elements},
      {"code_bits", w.code_bits},
      {"effective_bits", report_numbers::json(w.effective_bits)},
      {"codes_used", report_numbers::json(w.codes_used)},
      {"outlier_ratio", report_numbers::json(w.outlier_ratio)},
      {"outlier_group", w.outlier_group},
      {"tensor_outlier_ratio", report_numbers::json(w.tensor_outlier_ratio)},
      {"rms", report_numbers::json(w.rms)},
      {"step", {{"min", report_numbers::json(w.step_min)}, {"median", report_numbers::json(w.step_median)}, {"max", report_numbers::json(w.step_max)}}},
      {"typical_steps", report_numbers::json(w.typical_codes)},
      {"est_rel_error", report_numbers::json(w.est_rel_error)},
  };
  nlohmann::ordered_json flags = nlohmann::ordered_json::array();
  for (const WeightFlag& f : w.flags) flags.push_back({{"id", f.id}, {"message", f.message}});
  j["flags"] = flags;
  if (w.has_baseline) {
    j["baseline"] = {{"name", w.baseline_name}, {"rel_error", report_numbers::json(w.rel_error)},
                     {"sqnr_db", report_numbers::json(w.sqnr_db)}};
  } else if (!w.baseline_name.empty()) {
    j["baseline"] = {{"note", w.baseline_name}};
  }
  return j;
}

}  // namespace

int64_t WeightReport::flagged() const {
  int64_t n = 0;
  for (const WeightDiagnosticsResult& s : shards) n += s.flagged();
  return n;
}

int64_t WeightReport::weights() const {
  int64_t n = 0;
  for (const WeightDiagnosticsResult& s : shards) n += static_cast<int64_t>(s.weights.size());
  return n;
}

// A shard without a compressed weight gives the diagnostics nothing to look at; reporting it
// "clean" would pass an unquantized build that was meant to be quantized.
std::string WeightReport::verdict() const {
  if (flagged() > 0) return "flagged";
  return weights() == 0 ? "nothing checked" : "clean";
}

int WeightReport::exit_code() const { return flagged() == 0 && weights() > 0 ? 0 : 1; }

ReportEnvelope weight_report_envelope(const WeightReport& report) {
  ReportEnvelope e = make_report_envelope("weight-diagnostics", kWeightReportVersion, "golden-validator",
                                          report.tool_version, "weights", report.command_line);
  e.set_gate_verdict(report.exit_code() == 0);
  if (report.weights() == 0) e.verdict = "no_evidence";
  for (const WeightDiagnosticsResult& s : report.shards) {
    e.provenance.shards.push_back({"candidate", s.shard, s.fingerprint});
    if (!s.baseline.empty()) e.provenance.shards.push_back({"baseline", s.baseline, s.baseline_fingerprint});
  }
  return e;
}

std::string weight_report_json(const WeightReport& report) {
  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  int64_t weights = 0;
  for (const WeightDiagnosticsResult& s : report.shards) {
    nlohmann::ordered_json ws = nlohmann::ordered_json::array();
    for (const WeightDiagnostic& w : s.weights) ws.push_back(weight_json(w));
    weights += static_cast<int64_t>(s.weights.size());
    nlohmann::ordered_json js = {{"path", s.shard}, {"fingerprint", s.fingerprint}, {"weights", ws},
                         {"flagged", s.flagged()}};
    if (!s.baseline.empty()) {
      js["baseline"] = {{"path", s.baseline}, {"fingerprint", s.baseline_fingerprint}};
    }
    shards.push_back(js);
  }
  nlohmann::ordered_json j = envelope_json(weight_report_envelope(report));
  j["summary"] = {{"shards", report.shards.size()}, {"weights", weights}, {"flagged", report.flagged()}};
  j["shards"] = shards;
  return json_util::file_text(j);
}

std::string weight_report_table(const WeightReport& report, bool all) {
  std::string out;
  for (const WeightDiagnosticsResult& s : report.shards) {
    if (s.weights.empty()) {
      out += fmt::format("NONE   {}  no compressed weight: nothing to diagnose (an unquantized "
                         "build?)  (fingerprint {})\n",
                         s.shard, s.fingerprint.substr(0, 16));
      continue;
    }
    out += fmt::format("{}  {}  {} compressed weight(s), {} flagged  (fingerprint {})\n",
                       s.flagged() ? "FLAG " : "CLEAN", s.shard, s.weights.size(), s.flagged(),
                       s.fingerprint.substr(0, 16));
    if (!s.baseline.empty()) out += fmt::format("      baseline {}\n", s.baseline);
    bool header = false;
    for (const WeightDiagnostic& w : s.weights) {
      if (!all && w.flags.empty()) continue;
      if (!header) {
        out += fmt::format("      {:<34} {:<46} {:>6} {:>8} {:>8} {:>8}  {}\n", "weight (use)",
                           "form", "bits", "outlier", "est.err", "rel.err", "flags");
        header = true;
      }
      out += fmt::format("      {:<34} {:<46} {:>6} {:>8} {:>8} {:>8}  {}\n", w.key, w.form,
                         text(w.effective_bits, 2), text(w.outlier_ratio, 1),
                         text(w.est_rel_error, 3), w.has_baseline ? text(w.rel_error, 3) : "-",
                         flag_ids(w));
      for (const WeightFlag& f : w.flags) out += fmt::format("        {}: {}\n", f.id, f.message);
    }
  }
  if (report.weights() == 0) {
    out += fmt::format("weights: {} shard(s), no compressed weight: nothing to diagnose (an "
                       "unquantized build?) -> {}\n",
                       report.shards.size(), report.verdict());
    return out;
  }
  out += fmt::format("weights: {} shard(s), {} weight(s) flagged -> {}\n", report.shards.size(),
                     report.flagged(), report.verdict());
  return out;
}

std::string weight_report_markdown(const WeightReport& report) {
  std::string out = fmt::format("## Weight diagnostics: {} ({} flagged)\n\n", report.verdict(),
                                report.flagged());
  for (const WeightDiagnosticsResult& s : report.shards) {
    out += fmt::format("### {}\n\nFingerprint `{}`", md_code(s.shard), s.fingerprint);
    if (!s.baseline.empty()) out += fmt::format("; baseline {}", md_code(s.baseline));
    out += "\n\n| weight (use) | form | effective bits | outlier ratio | est. error | rel. error | flags |\n"
           "|---|---|---:|---:|---:|---:|---|\n";
    for (const WeightDiagnostic& w : s.weights) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", md_escape(w.key),
                         md_escape(w.form), text(w.effective_bits, 2), text(w.outlier_ratio, 1),
                         text(w.est_rel_error, 3), w.has_baseline ? text(w.rel_error, 3) : "-",
                         md_escape(flag_ids(w)));
    }
    for (const WeightDiagnostic& w : s.weights) {
      for (const WeightFlag& f : w.flags) {
        out += fmt::format("\n- **{}** {}: {}", md_escape(f.id), md_code(w.key), md_escape(f.message));
      }
    }
    out += "\n\n";
  }
  return out;
}

std::string weight_report_junit(const WeightReport& report) {
  int64_t tests = 0;
  std::string cases;
  for (const WeightDiagnosticsResult& s : report.shards) {
    for (const WeightDiagnostic& w : s.weights) {
      ++tests;
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}:{}\">\n", xml_escape(s.shard),
                           xml_escape(w.function), xml_escape(w.key));
      for (const WeightFlag& f : w.flags) {
        cases += fmt::format("      <failure type=\"{}\" message=\"{}\"/>\n", xml_escape(f.id),
                             xml_escape(f.message));
      }
      cases += "    </testcase>\n";
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"weights\" "
      "tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      tests, report.flagged(), cases);
}

}  // namespace sg
