// Self-contained HTML page of a golden report: summary, a per-layer × per-position cosine heat
// map and a per-layer line chart of the gated cosine statistic (inline SVG, no scripts, no
// external assets), the per-check table and the rows excluded as unstable. A report with several
// views (run --both: free-running and teacher-forced) gets one chart per view, each titled with
// its view: joined in one line, a teacher-forced point would read as the next free-running one.
#include "report/golden_report_util.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace sg {
namespace {

using report_util::fmt_num;
using report_util::xml_escape;

// Green at or above the threshold (darker when closer to 1), orange to red below it.
std::string cell_color(const RowResult& row, Verdict verdict, double threshold) {
  if (row.nonfinite) return "#000000";
  if (row.degenerate) return "#c8c8c8";
  if (verdict == Verdict::kUnstable) return "#8e44ad";
  const auto& v = row.value(Metric::kCosine);
  if (!v) return "#ffffff";
  if (*v >= threshold) {
    const double t = threshold >= 1.0 ? 1.0 : std::clamp((*v - threshold) / (1.0 - threshold), 0.0, 1.0);
    const int g = static_cast<int>(200 - 80 * t);
    return fmt::format("#{:02x}{:02x}{:02x}", 60, g, 90);
  }
  const double t = std::clamp((threshold - *v) / 0.2, 0.0, 1.0);  // 0.2 below → full red
  const int g = static_cast<int>(170 * (1.0 - t));
  return fmt::format("#{:02x}{:02x}{:02x}", 230, g, 40);
}

// What a heat-map column is: "position", or "seed" for probe rows.
std::string row_axis_of(const FidelityRun& run) {
  for (const CheckResult& c : run.checks) {
    if (!c.rows.empty()) return c.row_axis;
  }
  return "position";
}

// The anchor of one heat-map cell, so the summary can link to it.
std::string cell_id(size_t check, size_t row) { return fmt::format("cell-{}-{}", check, row); }

// Room for axis labels: at most one label every `min_gap` pixels (every k-th, k >= 1).
size_t label_step(double spacing, double min_gap) {
  return spacing >= min_gap ? 1 : static_cast<size_t>(std::ceil(min_gap / std::max(spacing, 1e-9)));
}

// Sized to fit a 1400 px wide window at 128 positions (cells narrow down to 4 px) with labels
// as wide as the longest check id; wider maps scroll inside their own box, never the page.
std::string heat_map(const GoldenReport& report, const std::vector<size_t>& order) {
  const FidelityRun& run = report.run;
  size_t positions = 1, longest = 4;
  for (size_t i : order) {
    positions = std::max(positions, run.checks[i].rows.size());
    longest = std::max(longest, run.checks[i].identity.id().size());
  }
  const int label_w = std::clamp(static_cast<int>(longest) * 7 + 12, 80, 320);
  const int cell_w = std::clamp(1000 / static_cast<int>(positions), 4, 36);
  const int cell_h = 20, top = 34;
  const int width = label_w + cell_w * static_cast<int>(positions) + 10;
  const int height = top + cell_h * static_cast<int>(order.size()) + 10;
  // Escaped like every other name: a report read back (merge, regate) carries its row axis as
  // any string the file held.
  const std::string axis = xml_escape(row_axis_of(run));
  std::string svg = fmt::format(
      "<div class=\"scroll\"><svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"cosine per check and {}\">\n",
      width, height, axis);
  svg += fmt::format("<text x=\"{}\" y=\"11\" class=\"axis title\">{} →</text>\n", label_w, axis);
  const size_t step = label_step(cell_w, 24);
  for (size_t p = 0; p < positions; p += step) {
    svg += fmt::format("<text x=\"{}\" y=\"26\" class=\"axis\" text-anchor=\"middle\">{}</text>\n",
                       label_w + cell_w * static_cast<int>(p) + cell_w / 2, p);
  }
  for (size_t r = 0; r < order.size(); ++r) {
    const size_t i = order[r];
    const CheckResult& c = run.checks[i];
    const double threshold = report_util::cosine_threshold(report, i);
    const int y = top + cell_h * static_cast<int>(r);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis label\" text-anchor=\"end\">{}</text>\n",
                       label_w - 6, y + 14, xml_escape(c.identity.id()));
    for (size_t p = 0; p < c.rows.size(); ++p) {
      const RowResult& row = c.rows[p];
      const CheckVerdict& cv = report.evaluation.checks[i];
      const Verdict rv = p < cv.rows.size() ? cv.rows[p].verdict : Verdict::kPass;
      std::string state = row.nonfinite ? "nonfinite" : (row.degenerate ? "degenerate" : report_util::fmt_gated(report_util::find_metric(cv, Metric::kCosine), row.value(Metric::kCosine)));
      if (rv == Verdict::kUnstable) {
        state += fmt::format(", unstable: the FP16 baseline moves to cosine {} (excluded)",
                             fmt_num(row.stability_cosine, 4));
      }
      svg += fmt::format(
          "<rect class=\"cell\" id=\"{}\" data-check=\"{}\" data-position=\"{}\" x=\"{}\" "
          "y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {} {}: cosine {} "
          "(threshold {})</title></rect>\n",
          cell_id(i, p), xml_escape(c.identity.id()), row.position,
          label_w + cell_w * static_cast<int>(p), y, std::max(cell_w - 1, 1), cell_h - 1,
          cell_color(row, rv, threshold), xml_escape(c.identity.id()), axis, row.position, state,
          fmt::format("{}", threshold));
    }
  }
  svg += "</svg></div>\n";
  return svg;
}

// The cell with the lowest finite cosine of the whole map (check, row), if any.
std::optional<std::pair<size_t, size_t>> worst_cell(const FidelityRun& run) {
  std::optional<std::pair<size_t, size_t>> worst;
  double lowest = 2;
  for (size_t i = 0; i < run.checks.size(); ++i) {
    for (size_t p = 0; p < run.checks[i].rows.size(); ++p) {
      const auto& v = run.checks[i].rows[p].value(Metric::kCosine);
      if (v && std::isfinite(*v) && *v < lowest) {
        lowest = *v;
        worst = std::make_pair(i, p);
      }
    }
  }
  return worst;
}

// The chart of one view (`view`: its labels, "" when the report has one view): the gated
// cosine of every layered check along the layers, then every check without a layer (logits,
// other outputs) as its own point after them, so a failing output is never off the chart.
std::string line_chart(const GoldenReport& report, const std::vector<size_t>& order,
                       const std::string& view) {
  const FidelityRun& run = report.run;
  std::vector<size_t> layered, outputs;
  for (size_t i : order) (run.checks[i].identity.layer ? layered : outputs).push_back(i);
  if (layered.empty() && outputs.empty()) return "<p>No checks in this report.</p>\n";
  std::vector<size_t> all = layered;
  all.insert(all.end(), outputs.begin(), outputs.end());
  double lo = 1.0, threshold = 1.0;
  for (size_t i : all) {
    threshold = std::min(threshold, report_util::cosine_threshold(report, i));
    if (auto m = report_util::gated_cosine(report, i); m && std::isfinite(*m)) lo = std::min(lo, *m);
  }
  lo = std::max(-1.0, std::min(lo, threshold) - 0.02);
  const std::string stat = report_util::cosine_statistic(report);
  const int w = 1000, h = 290, left = 60, right = 20, top = 26, bottom = 56;
  const double span = 1.0 - lo;
  auto x_of = [&](size_t k) {
    return left + (all.size() == 1 ? (w - left - right) / 2.0
                                   : (w - left - right) * static_cast<double>(k) /
                                         static_cast<double>(all.size() - 1));
  };
  auto y_of = [&](double v) { return top + (h - top - bottom) * (1.0 - (v - lo) / span); };
  std::string svg = fmt::format(
      "<svg class=\"linechart\" data-view=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"cosine {} per check{}\">\n",
      xml_escape(view), w, h, stat, view.empty() ? "" : ", view " + xml_escape(view));
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"frame\"/>\n", left, h - bottom, w - right, h - bottom);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"frame\"/>\n", left, top, left, h - bottom);
  for (double v : {lo, (lo + 1.0) / 2, 1.0}) {
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"axis\" text-anchor=\"end\">{:.3f}</text>\n",
                       left - 6, y_of(v) + 4, v);
  }
  svg += fmt::format("<text x=\"{}\" y=\"12\" class=\"axis title\">cosine {}</text>\n", left - 40,
                     xml_escape(stat));
  svg += fmt::format("<line class=\"threshold\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"><title>threshold {}</title></line>\n",
                     left, y_of(threshold), w - right, y_of(threshold), fmt_num(threshold, 3));
  svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"axis threshold-label\" text-anchor=\"end\">threshold {}</text>\n",
                     w - right, y_of(threshold) - 4, fmt_num(threshold, 3));
  // Layer labels at least 28 px apart, the last layer always labelled; outputs are labelled on
  // a second line, so their names never run into the layer numbers.
  const double spacing = all.size() > 1 ? (w - left - right) / static_cast<double>(all.size() - 1) : w;
  const size_t step = label_step(spacing, 28);
  const size_t last = layered.empty() ? 0 : layered.size() - 1;
  std::string points;
  for (size_t k = 0; k < all.size(); ++k) {
    const CheckResult& c = run.checks[all[k]];
    const bool is_layer = k < layered.size();
    const auto m = report_util::gated_cosine(report, all[k]);
    if (!is_layer) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"axis xlabel\" text-anchor=\"end\">{}</text>\n",
                         x_of(k), h - bottom + 30, xml_escape(c.identity.id()));
    } else if (k == last || (k % step == 0 && last - k >= step)) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"axis xlabel\" text-anchor=\"middle\">{}</text>\n",
                         x_of(k), h - bottom + 16, *c.identity.layer);
    }
    if (!m || !std::isfinite(*m)) continue;
    if (is_layer) points += fmt::format("{:.1f},{:.1f} ", x_of(k), y_of(*m));
    const std::string where = is_layer ? fmt::format("layer {}", *c.identity.layer) : "output";
    svg += fmt::format("<circle class=\"point{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"><title>{} ({}): cosine {} {}</title></circle>\n",
                       is_layer ? "" : " output", x_of(k), y_of(*m), is_layer ? 3 : 5,
                       xml_escape(c.identity.id()), where, stat,
                       report_util::fmt_gated(report_util::find_metric(report.evaluation.checks[all[k]], Metric::kCosine), m));
  }
  if (!points.empty()) svg += fmt::format("<polyline class=\"series\" points=\"{}\"/>\n", points);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">layer{}</text>\n",
                     (left + w - right) / 2, h - 8, outputs.empty() ? "" : " (then outputs without a layer)");
  svg += "</svg>\n";
  return svg;
}

// "view mode=teacher-forced: each shard's own error on golden inputs ..." from the run's views.
std::string view_title(const FidelityRun& run, const std::string& labels) {
  for (const ReportView& v : run.views) {
    if (labels == "mode=" + v.mode) return fmt::format("view {}: {}", v.mode, v.answers);
  }
  return labels.empty() ? std::string("checks without labels") : labels;
}

}  // namespace

std::string golden_report_html(const GoldenReport& report) {
  const FidelityRun& run = report.run;
  const GateEvaluation& ev = report.evaluation;
  const bool pass = ev.summary.verdict == Verdict::kPass;
  const std::vector<size_t> order = report_util::layer_order(run);
  if (report.error) {
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>golden-validator {0}: ERROR</title>\n</head>\n<body>\n"
        "<h1>golden-validator {0}: <span style=\"color:#c62828\">ERROR</span> (exit {1})</h1>\n"
        "<p>{2}: {3}</p>\n<ul>\n<li>tool: golden-validator {4}</li>\n"
        "<li>command line: <code>{5}</code></li>\n</ul>\n</body>\n</html>\n",
        xml_escape(run.command), report.error->exit_code, xml_escape(report.error->kind),
        xml_escape(report.error->message), xml_escape(report.tool_version),
        xml_escape(report_util::command_line_text(report.command_line)));
  }
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<title>golden-validator {}: {}</title>\n", xml_escape(report_util::command_text(report)),
                     report_util::verdict_word(report));
  out += "<style>\n"
         "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
         ".pass{color:#1a7f37}.fail{color:#c62828}.excluded{color:#777}\n"
         "table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
         "td.name,th.name{text-align:left}\n"
         ".axis{font-size:11px;fill:#444}.frame{stroke:#888}.threshold{stroke:#c62828;stroke-dasharray:5,4}\n"
         ".series{fill:none;stroke:#1565c0;stroke-width:2}.point{fill:#1565c0}\n"
         ".legend span{display:inline-block;width:14px;height:14px;vertical-align:middle;margin:0 4px 0 12px}\n"
         ".scroll{max-width:100%;overflow-x:auto}.point.output{fill:#6a1b9a}.title{font-weight:bold}\n"
         "</style>\n</head>\n<body>\n";
  out += fmt::format("<h1>golden-validator {}: <span class=\"{}\">{}</span></h1>\n", xml_escape(report_util::command_text(report)),
                     pass || is_empty_slice(report) ? "pass" : "fail", report_util::verdict_word(report));
  out += fmt::format("<p>{}</p>\n<ul>\n", xml_escape(ev.summary.message));
  // The first failure and the worst cell one click away, whatever the size of the map.
  if (ev.summary.first_failure_check && ev.summary.first_failure_row >= 0) {
    const size_t i = *ev.summary.first_failure_check;
    out += fmt::format("<li class=\"fail\">first failure: <a href=\"#{}\">{} {} {}</a></li>\n",
                       cell_id(i, static_cast<size_t>(ev.summary.first_failure_row)),
                       xml_escape(run.checks[i].identity.id()), xml_escape(run.checks[i].row_axis),
                       ev.summary.first_failure_position);
  }
  if (const auto worst = worst_cell(run)) {
    const CheckResult& c = run.checks[worst->first];
    out += fmt::format("<li>lowest cosine: <a href=\"#{}\">{} {} {}: {}</a></li>\n",
                       cell_id(worst->first, worst->second), xml_escape(c.identity.id()),
                       xml_escape(c.row_axis), c.rows[worst->second].position,
                       report_util::fmt_gated(report_util::find_metric(report.evaluation.checks[worst->first], Metric::kCosine),
                                              c.rows[worst->second].value(Metric::kCosine)));
  }
  for (const ReportInput& in : run.inputs) {
    out += fmt::format("<li>{}: <code>{}</code> <small>sha256 {}</small></li>\n", xml_escape(in.role),
                       xml_escape(in.path), xml_escape(in.sha256));
  }
  if (const std::string slice = report_util::slice_text(report); !slice.empty()) {
    out += fmt::format("<li>{}</li>\n", xml_escape(slice));
  }
  out += fmt::format("<li>policy: <code>{}</code>{}</li>\n", xml_escape(report.policy.source),
                     xml_escape(report_util::policy_note(report.policy)));
  out += fmt::format("<li>tool: golden-validator {}</li>\n", xml_escape(report.tool_version));
  if (!report.command_line.empty()) {
    out += fmt::format("<li>command line: <code>{}</code></li>\n",
                       xml_escape(report_util::command_line_text(report.command_line)));
  }
  for (const ReportView& v : run.views) {
    out += fmt::format("<li>view <b>{}</b>: {}. Inputs: {}</li>\n", xml_escape(v.mode),
                       xml_escape(v.answers), xml_escape(report_util::feeds_text(v)));
  }
  if (!report.views_finding.empty()) {
    out += fmt::format("<li><b>{}</b></li>\n", xml_escape(report.views_finding));
  }
  out += "</ul>\n";
  if (!run.shards.empty()) {
    out += fmt::format("<details><summary>Shards executed{}, by fingerprint (sha256 over program and "
                       "every weight file)</summary>\n<ul>\n",
                       report_util::is_regated(report) ? " by the saved run" : "");
    for (const ReportShard& sh : run.shards) {
      out += fmt::format("<li><code>{}</code>: <code>{}</code> <small>{}</small></li>\n",
                         xml_escape(sh.id), xml_escape(sh.path), xml_escape(sh.fingerprint));
    }
    out += "</ul>\n</details>\n";
  }
  out += fmt::format("<h2>Cosine per check and {}</h2>\n", xml_escape(row_axis_of(run)));
  out += "<p class=\"legend\"><span style=\"background:#3c7850\"></span>at or above threshold"
         "<span style=\"background:#e66e28\"></span>below<span style=\"background:#e60028\"></span>"
         "0.2 or more below<span style=\"background:#c8c8c8\"></span>degenerate (both zero)"
         "<span style=\"background:#8e44ad\"></span>unstable (the FP16 baseline itself moves; excluded)"
         "<span style=\"background:#000\"></span>NaN/Inf</p>\n";
  out += heat_map(report, order);
  out += fmt::format("<h2>Cosine {} per layer and output (the statistic the gate used)</h2>\n",
                     xml_escape(report_util::cosine_statistic(report)));
  const std::vector<std::vector<size_t>> groups = report_util::view_groups(run);
  if (groups.size() <= 1) {
    out += line_chart(report, order, "");
  } else {
    // One chart per view, never one line through both.
    for (const std::vector<size_t>& g : groups) {
      const std::string view = report_util::labels_text(run.checks[g.front()].identity);
      out += fmt::format("<h3>{}</h3>\n", xml_escape(view_title(run, view)));
      out += line_chart(report, g, view);
    }
  }
  out += fmt::format(
      "<h2>Checks</h2>\n<table>\n<tr><th>layer</th><th class=\"name\">check</th><th class=\"name\">kind</th>"
      "<th>cosine {}</th><th>worst pos</th><th>norm ratio</th><th>rel L2</th><th>SNR dB</th>"
      "<th class=\"name\">verdict</th></tr>\n",
      xml_escape(report_util::cosine_statistic(report)));
  for (size_t i : order) {
    const CheckResult& c = run.checks[i];
    const CheckVerdict& v = ev.checks[i];
    const MetricVerdict* cos = report_util::find_metric(v, Metric::kCosine);
    const MetricVerdict* norm = report_util::find_metric(v, Metric::kNormRatio);
    const MetricVerdict* rel = report_util::find_metric(v, Metric::kRelL2);
    const MetricVerdict* snr = report_util::find_metric(v, Metric::kSnrDb);
    out += fmt::format(
        "<tr><td>{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td class=\"name {}\" title=\"{}\">{}</td></tr>\n",
        report_util::layer_text(c.identity), xml_escape(c.identity.id()), xml_escape(c.identity.kind),
        report_util::cosine_value_text(report, i),
        cos && cos->worst_position >= 0 ? std::to_string(cos->worst_position) : "-",
        norm ? "[" + report_util::fmt_gated(norm, norm->value, 4) + ", " + report_util::fmt_gated(norm, norm->value_upper, 4) + "]" : "-",
        report_util::fmt_gated(rel, rel ? rel->value : std::nullopt), fmt_num(snr ? snr->value : std::nullopt, 2),
        v.verdict == Verdict::kPass ? "pass" : (is_unjudged(v.verdict) ? "excluded" : "fail"),
        xml_escape(v.message), verdict_name(v.verdict));
  }
  out += "</table>\n";
  std::string unstable;
  for (size_t i : order) {
    for (const report_util::UnstableRow& u : report_util::unstable_rows(report, i)) {
      unstable += fmt::format("<li class=\"unstable\"><code>{}</code> {}</li>\n",
                              xml_escape(run.checks[i].identity.id()), xml_escape(u.text()));
    }
  }
  if (!unstable.empty()) {
    out += "<h2>Unstable rows (excluded from the gate)</h2>\n<p>The FP16 baseline itself moves "
           "more than the gate allows on these inputs (a near tie, e.g. an MoE router): they "
           "measure the input, not quantization error.</p>\n<ul>\n" + unstable + "</ul>\n";
  }
  if (report.culprits) {
    out += culprit_report_html(*report.culprits, 10);
  } else if (!report.culprits_note.empty()) {
    out += fmt::format("<h2>Culprit ops</h2>\n<p>{}</p>\n", xml_escape(report.culprits_note));
  }
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace sg
