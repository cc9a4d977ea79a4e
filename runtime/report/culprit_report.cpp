// The culprit-search report forms (culprit_report.h).
#include "shardgate/culprit_report.h"
#include "report/envelope_json.h"

#include "report/escape.h"
#include "report/report_numbers.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace sg {
namespace {

using report_numbers::text;

std::string op_label(const OpComparison& o) {
  return fmt::format("#{} {} '{}'", o.op_index, o.op_type, o.output);
}

std::string weights_of(const OpComparison& o) {
  std::string s;
  for (const std::string& w : o.compressed_weights) s += (s.empty() ? "" : ", ") + w;
  return s;
}

}  // namespace

int64_t CulpritReport::failing_ops() const {
  int64_t n = 0;
  for (const CulpritResult& r : shards) {
    for (const OpComparison& o : r.ops) n += o.fails;
  }
  return n;
}

int64_t CulpritReport::source_ops() const {
  int64_t n = 0;
  for (const CulpritResult& r : shards) n += static_cast<int64_t>(r.sources().size());
  return n;
}

ReportEnvelope culprit_report_envelope(const CulpritReport& report) {
  ReportEnvelope e = make_report_envelope("culprits", kCulpritReportVersion, "golden-validator",
                                          report.tool_version, "culprits", report.command_line);
  e.verdict = "diagnosis";  // a diagnosis gates nothing
  e.exit_code = 0;
  for (const CulpritResult& r : report.shards) {
    e.provenance.shards.push_back({"candidate", r.candidate, r.candidate_fingerprint});
    e.provenance.shards.push_back({"baseline", r.baseline, r.baseline_fingerprint});
  }
  return e;
}

std::string culprit_report_json(const CulpritReport& report) {
  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (const CulpritResult& r : report.shards) {
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const OpComparison& o : r.ops) {
      ops.push_back({{"op_index", o.op_index}, {"op_type", o.op_type}, {"output", o.output},
                     {"baseline_output", o.baseline_output}, {"matched_by", o.matched_by},
                     {"dtype", o.dtype}, {"shape", o.shape}, {"cosine", report_numbers::json(o.cosine)},
                     {"norm_ratio", report_numbers::json(o.norm_ratio)}, {"rel_l2", report_numbers::json(o.rel_l2)},
                     {"snr_db", report_numbers::json(o.snr_db)}, {"input_cosine", report_numbers::json(o.input_cosine)},
                     {"added_error", report_numbers::json(o.added_error)}, {"fails", o.fails},
                     {"source", o.source}, {"compressed_weights", o.compressed_weights}});
    }
    nlohmann::ordered_json sources = nlohmann::ordered_json::array();
    for (const OpComparison* o : r.sources()) sources.push_back(o->output);
    shards.push_back({{"candidate", {{"path", r.candidate}, {"fingerprint", r.candidate_fingerprint}}},
                      {"baseline", {{"path", r.baseline}, {"fingerprint", r.baseline_fingerprint}}},
                      {"function", r.function},
                      {"min_cosine", r.min_cosine},
                      {"sources", sources},
                      {"unmatched", r.unmatched},
                      {"notes", r.notes},
                      {"ops", ops}});
  }
  nlohmann::ordered_json j = envelope_json(culprit_report_envelope(report));
  j["inputs"] = report.inputs;
  j["summary"] = {{"shards", report.shards.size()}, {"failing_ops", report.failing_ops()},
                  {"source_ops", report.source_ops()}};
  j["shards"] = shards;
  return json_util::file_text(j);
}

std::string culprit_report_table(const CulpritReport& report, size_t top, bool all) {
  std::string out = fmt::format("inputs: {}\n", report.inputs);
  for (const CulpritResult& r : report.shards) {
    out += fmt::format("{}  vs {}  ({} ops aligned, {} unmatched)\n", r.candidate, r.baseline,
                       r.ops.size(), r.unmatched.size());
    const auto sources = r.sources();
    if (sources.empty()) {
      // Failing ops without a source: each reads an input that fails or that nothing could be
      // compared with (an unmatched op's), so "no op output below" would be false.
      const auto failing = std::count_if(r.ops.begin(), r.ops.end(), [](const OpComparison& o) { return o.fails; });
      out += failing == 0
                 ? fmt::format("      source ops: none (no op output below cosine {})\n", r.min_cosine)
                 : fmt::format("      source ops: none ({} op output(s) fail, each reading an input that "
                               "fails or has no baseline value: see the unmatched ops and notes)\n",
                               failing);
    }
    for (const OpComparison* o : sources) {
      out += fmt::format("      source op: {}  cosine {} (inputs {})", op_label(*o),
                         text(o->cosine, 6), text(o->input_cosine, 6));
      if (!o->compressed_weights.empty()) out += fmt::format("  weights: {}", weights_of(*o));
      out += "\n";
    }
    const auto added = r.top_added(top);
    if (!added.empty()) out += "      most error added (1 - cosine of output minus of worst input):\n";
    for (const OpComparison* o : added) {
      out += fmt::format("        {:<48} +{:.6f}  cosine {}{}\n", op_label(*o), o->added_error,
                         text(o->cosine, 6),
                         o->compressed_weights.empty() ? "" : "  weights: " + weights_of(*o));
    }
    if (all) {
      for (const OpComparison& o : r.ops) {
        out += fmt::format("        {:<48} cos {:>9} in {:>9} snr {:>7} {}{}\n", op_label(o),
                           text(o.cosine, 6), text(o.input_cosine, 6), text(o.snr_db, 1),
                           o.fails ? "FAIL" : "ok", o.source ? " SOURCE" : "");
      }
    }
    for (const std::string& n : r.notes) out += fmt::format("      note: {}\n", n);
  }
  out += fmt::format("culprits: {} shard(s), {} op output(s) below the threshold, {} source op(s)\n",
                     report.shards.size(), report.failing_ops(), report.source_ops());
  return out;
}

std::string culprit_report_markdown(const CulpritReport& report, size_t top) {
  std::string out = fmt::format("## Culprit ops: {} source op(s), {} op output(s) below the threshold\n\nInputs: {}\n\n",
                                report.source_ops(), report.failing_ops(), md_escape(report.inputs));
  for (const CulpritResult& r : report.shards) {
    out += fmt::format("### {} vs {}\n\n", md_code(r.candidate), md_code(r.baseline));
    out += "| op | cosine | worst input | added error | source | weights |\n|---|---:|---:|---:|---|---|\n";
    std::vector<const OpComparison*> rows = r.sources();
    for (const OpComparison* o : r.top_added(top)) {
      if (std::find(rows.begin(), rows.end(), o) == rows.end()) rows.push_back(o);
    }
    for (const OpComparison* o : rows) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_escape(op_label(*o)),
                         text(o->cosine, 6), text(o->input_cosine, 6), text(o->added_error, 6),
                         o->source ? "yes" : "", md_escape(weights_of(*o)));
    }
    out += "\n";
  }
  return out;
}

std::string culprit_report_html(const CulpritReport& report, size_t top) {
  std::string out = fmt::format(
      "<h2>Culprit ops: {} source op(s), {} op output(s) below the threshold</h2>\n<p>Inputs: {}. "
      "A source op fails while every runtime input it reads passes: the error enters there.</p>\n",
      report.source_ops(), report.failing_ops(), xml_escape(report.inputs));
  for (const CulpritResult& r : report.shards) {
    out += fmt::format("<h3><code>{}</code> vs <code>{}</code></h3>\n<table class=\"culprits\">\n"
                       "<tr><th class=\"name\">op</th><th>cosine</th><th>worst input</th>"
                       "<th>added error</th><th class=\"name\">source</th><th class=\"name\">weights</th></tr>\n",
                       xml_escape(r.candidate), xml_escape(r.baseline));
    std::vector<const OpComparison*> rows = r.sources();
    for (const OpComparison* o : r.top_added(top)) {
      if (std::find(rows.begin(), rows.end(), o) == rows.end()) rows.push_back(o);
    }
    for (const OpComparison* o : rows) {
      out += fmt::format("<tr{}><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
                         "<td class=\"name\">{}</td><td class=\"name\">{}</td></tr>\n",
                         o->source ? " class=\"source\"" : "", xml_escape(op_label(*o)),
                         text(o->cosine, 6), text(o->input_cosine, 6), text(o->added_error, 6),
                         o->source ? "yes" : "", xml_escape(weights_of(*o)));
    }
    out += "</table>\n";
  }
  return out;
}

std::string culprit_report_junit(const CulpritReport& report) {
  int64_t tests = 0, failures = 0;
  std::string cases;
  for (const CulpritResult& r : report.shards) {
    for (const OpComparison& o : r.ops) {
      ++tests;
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", xml_escape(r.candidate),
                           xml_escape(op_label(o)));
      if (o.fails) {
        ++failures;
        cases += fmt::format(
            "      <failure message=\"{}\"/>\n",
            xml_escape(fmt::format("cosine {} < {}{}", text(o.cosine, 6), r.min_cosine,
                                   o.source ? " (source op: every input passes)" : "")));
      }
      cases += "    </testcase>\n";
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"culprits\" "
      "tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      tests, failures, cases);
}

}  // namespace sg
