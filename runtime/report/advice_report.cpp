// The precision-advice report forms (advise.h): JSON (reports/schema/advice.schema.json),
// terminal table, Markdown and JUnit.
#include "shardgate/advice_report.h"

#include "report/envelope_json.h"
#include "report/escape.h"
#include "report/report_numbers.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sg {
namespace {

using report_numbers::text;

constexpr const char* kRecommendation =
    "The tool recommends; the user re-converts: keep these weights at fp16 in the conversion "
    "(e.g. coremltools op_name_configs set to None for their const ops) and gate the new build";

std::string verdict_line(const AdviceResult& r) {
  if (r.already_passes) return "the chain already passes its gate: nothing to advise (no search)";
  if (!r.search.found) {
    return fmt::format("no passing set found within {} chain run(s): {}", r.search.runs, r.search.stopped);
  }
  return fmt::format("keep {} weight(s) at fp16 (+{} bytes): the chain then passes its gate ({} chain "
                     "run(s); {})",
                     r.search.chosen.size(), r.added_bytes(), r.search.runs, r.search.stopped);
}

nlohmann::ordered_json opt(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(report_numbers::json(*v)) : nlohmann::ordered_json(nullptr);
}

// "0.957965 @6": the statistic and the position of its worst row (norm ratio: the range only,
// its two ends come from different rows).
std::string value_text(const std::optional<double>& v, const std::optional<double>& upper,
                       int64_t position) {
  if (!v) return "-";
  if (upper) return fmt::format("[{}, {}]", text(*v, 6), text(*upper, 6));
  return position >= 0 ? fmt::format("{} @{}", text(*v, 6), position) : text(*v, 6);
}

nlohmann::ordered_json candidate_json(const AdviceCandidate& c, size_t rank) {
  return {{"rank", rank + 1},
          {"step", c.step},
          {"shard", c.shard},
          {"baseline", c.baseline},
          {"function", c.function},
          {"value", c.value},
          {"baseline_value", c.baseline_value},
          {"key", c.key},
          {"form", c.form},
          {"readers", c.readers},
          {"evidence", c.evidence},
          {"evidence_text", c.evidence_text},
          {"sensitivity", report_numbers::json(c.sensitivity)},
          {"elements", c.elements},
          {"fp16_bytes", c.fp16_bytes},
          {"compressed_bytes", c.compressed_bytes},
          {"added_bytes", c.added_bytes()}};
}

}  // namespace

ReportEnvelope advice_report_envelope(const AdviceResult& r) {
  ReportEnvelope e = make_report_envelope("advice", kAdviceReportVersion, "golden-validator",
                                          r.tool_version, "advise", r.command_line);
  e.set_gate_verdict(r.exit_code() == 0);
  // Not "fail": nothing was judged, and `run` of the same chain says no_evidence.
  if (r.no_evidence) e.verdict = "no_evidence";
  e.provenance = r.provenance;
  return e;
}

std::string advice_report_json(const AdviceResult& r) {
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (size_t k = 0; k < r.candidates.size(); ++k) candidates.push_back(candidate_json(r.candidates[k], k));
  nlohmann::ordered_json chosen = nlohmann::ordered_json::array();
  for (size_t k : r.search.chosen) chosen.push_back(candidate_json(r.candidates[k], k));
  nlohmann::ordered_json trials = nlohmann::ordered_json::array();
  for (const AdviceTrial& t : r.search.trials) {
    trials.push_back({{"run", t.run}, {"action", t.action}, {"rank", t.candidate + 1},
                      {"value", r.candidates[t.candidate].value}, {"step", r.candidates[t.candidate].step},
                      {"set_size", t.set_size}, {"passes", t.passes}, {"kept", t.kept},
                      {"summary", t.summary}});
  }
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const AdviceCheck& c : r.checks) {
    nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
    for (const AdviceMetric& m : c.metrics) {
      metrics.push_back({{"metric", m.metric}, {"statistic", m.statistic},
                         {"before", opt(m.before)}, {"before_upper", opt(m.before_upper)},
                         {"after", opt(m.after)}, {"after_upper", opt(m.after_upper)},
                         {"verdict_before", m.verdict_before}, {"verdict_after", m.verdict_after},
                         {"worst_position_before", m.worst_position_before},
                         {"worst_position_after", m.worst_position_after},
                         {"threshold", opt(m.bound)}, {"threshold_upper", opt(m.upper)}});
    }
    checks.push_back({{"id", c.id}, {"verdict_before", c.verdict_before},
                      {"verdict_after", c.verdict_after}, {"metrics", metrics}});
  }
  const char* outcome = r.already_passes ? "already_passes" : r.search.found ? "found" : "not_found";
  nlohmann::ordered_json j = envelope_json(advice_report_envelope(r));
  j["chain"] = {{"path", r.chain}, {"sha256", r.chain_sha256}};
  j["views"] = r.views;
  j["baseline_replace"] = r.baseline_replace;
  j["max_runs"] = r.max_runs;
  j["summary"] = {{"outcome", outcome},
                  {"message", verdict_line(r)},
                  {"recommendation", kRecommendation},
                  {"weights", r.search.chosen.size()},
                  {"added_bytes", r.added_bytes()},
                  {"runs", r.search.runs},
                  {"stopped", r.search.stopped},
                  {"seconds", r.seconds},
                  {"before", r.verdict_before},
                  {"after", r.verdict_after}};
  j["culprits_note"] = r.culprits_note;
  j["chosen"] = chosen;
  j["candidates"] = candidates;
  j["trials"] = trials;
  j["checks"] = checks;
  j["notes"] = r.notes;
  return json_util::file_text(j);
}

std::string advice_report_table(const AdviceResult& r, bool all) {
  std::string out = fmt::format("chain    {} ({} view, baselines {})\nbefore   {}\n", r.chain, r.views,
                                r.baseline_replace, r.verdict_before);
  if (r.already_passes) return out + "advise: " + verdict_line(r) + "\n";
  out += fmt::format("ranking  {} candidate weight(s); {}\n", r.candidates.size(), r.culprits_note);
  if (!r.search.chosen.empty()) {
    out += "\n  rank  step         weight                            evidence  added bytes\n";
    for (size_t k : r.search.chosen) {
      const AdviceCandidate& c = r.candidates[k];
      std::string readers;
      for (const std::string& s : c.readers) readers += (readers.empty() ? "" : ", ") + s;
      out += fmt::format("  {:>4}  {:<12} {:<33} {:<9} {:>11}\n", k + 1, c.step, c.value, c.evidence,
                         c.added_bytes());
      out += fmt::format("        read by {}; evidence: {}\n        {} -> fp16: {} -> {} bytes\n", readers,
                         c.evidence_text, c.form, c.compressed_bytes, c.fp16_bytes);
    }
  }
  out += "\n  check                 metric             before (@ worst position)  after                      verdict\n";
  for (const AdviceCheck& c : r.checks) {
    for (const AdviceMetric& m : c.metrics) {
      out += fmt::format("  {:<21} {:<18} {:<26} {:<26} {} -> {}\n", c.id,
                         m.metric + " " + m.statistic, value_text(m.before, m.before_upper, m.worst_position_before),
                         value_text(m.after, m.after_upper, m.worst_position_after), m.verdict_before,
                         m.verdict_after.empty() ? "-" : m.verdict_after);
    }
  }
  if (all) {
    out += "\n  runs:\n";
    for (const AdviceTrial& t : r.search.trials) {
      out += fmt::format("    run {:>3}: {} #{} {} ({}): {} weight(s) fp16, {}{}\n", t.run, t.action,
                         t.candidate + 1, r.candidates[t.candidate].value, r.candidates[t.candidate].step,
                         t.set_size, t.passes ? "pass" : "fail",
                         t.action == "drop" ? (t.kept ? ", dropped" : ", kept in the set") : "");
    }
  }
  for (const std::string& n : r.notes) out += fmt::format("note: {}\n", n);
  if (!r.verdict_after.empty()) out += fmt::format("after    {}\n", r.verdict_after);
  out += fmt::format("advise: {}\n{}\n", verdict_line(r), kRecommendation);
  return out;
}

std::string advice_report_markdown(const AdviceResult& r) {
  std::string out = fmt::format("## Precision advice: {}\n\n{}\n\nChain {} ({} view), baselines {}. "
                                "Before: {}\n\n",
                                md_escape(verdict_line(r)), md_escape(kRecommendation), md_code(r.chain),
                                md_escape(r.views), md_code(r.baseline_replace), md_escape(r.verdict_before));
  if (r.already_passes) return out;
  if (!r.search.chosen.empty()) {
    out += "| rank | step | weight | read by | evidence | form | added bytes |\n|---:|---|---|---|---|---|---:|\n";
    for (size_t k : r.search.chosen) {
      const AdviceCandidate& c = r.candidates[k];
      std::string readers;
      for (const std::string& s : c.readers) readers += (readers.empty() ? "" : ", ") + s;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", k + 1, md_escape(c.step),
                         md_escape(c.value), md_escape(readers), md_escape(c.evidence_text),
                         md_escape(c.form), c.added_bytes());
    }
    out += "\n";
  }
  out += "| check | metric | before (@ worst position) | after | verdict |\n|---|---|---:|---:|---|\n";
  for (const AdviceCheck& c : r.checks) {
    for (const AdviceMetric& m : c.metrics) {
      out += fmt::format("| {} | {} {} | {} | {} | {} → {} |\n", md_escape(c.id), m.metric, m.statistic,
                         value_text(m.before, m.before_upper, m.worst_position_before), value_text(m.after, m.after_upper, m.worst_position_after),
                         m.verdict_before, m.verdict_after.empty() ? "-" : m.verdict_after);
    }
  }
  return out + "\n";
}

std::string advice_report_junit(const AdviceResult& r) {
  std::string cases;
  int64_t tests = 1, failures = 0;
  cases += "    <testcase classname=\"advise\" name=\"" + xml_escape(r.chain) + "\">\n";
  if (!r.already_passes && !r.search.found) {
    ++failures;
    cases += "      <failure message=\"" + xml_escape(verdict_line(r)) + "\"/>\n";
  } else {
    cases += "      <system-out>" + xml_escape(verdict_line(r)) + "</system-out>\n";
  }
  cases += "    </testcase>\n";
  for (size_t k : r.search.chosen) {
    const AdviceCandidate& c = r.candidates[k];
    ++tests;
    cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n      <system-out>{}</system-out>\n"
                         "    </testcase>\n",
                         xml_escape(c.shard), xml_escape(c.value),
                         xml_escape(fmt::format("keep at fp16 (+{} bytes): {}", c.added_bytes(), c.evidence_text)));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"advise\" "
      "tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      tests, failures, cases);
}

}  // namespace sg
