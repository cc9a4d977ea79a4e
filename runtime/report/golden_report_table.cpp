// Terminal table of a golden report: one line per check in layer order, logits per position,
// and a one-line trend (sparkline of min cosine per layer) that shows where a drop starts.
#include "report/golden_report_util.h"

#include <algorithm>

namespace sg {
namespace {

using report_util::fmt_gated;
using report_util::fmt_num;

std::string colored(const std::string& text, Verdict v, bool color) {
  if (!color) return text;
  const char* code = v == Verdict::kPass ? "\033[32m" : (v == Verdict::kNotGated || v == Verdict::kExcluded ? "\033[90m" : "\033[31m");
  return code + text + "\033[0m";
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string sparkline(const std::vector<std::optional<double>>& values, double threshold,
                      bool unicode) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char kAscii[] = "_.-:=+*#";
  double lo = threshold;
  for (const auto& v : values) {
    if (v && std::isfinite(*v)) lo = std::min(lo, *v);
  }
  lo = std::min(lo, threshold - 0.01);
  std::string out;
  for (const auto& v : values) {
    if (!v || std::isnan(*v)) {
      out += unicode ? "·" : "?";
      continue;
    }
    const double t = std::clamp((*v - lo) / (1.0 - lo), 0.0, 1.0);
    const int level = static_cast<int>(std::lround(t * 7));
    if (unicode) {
      out += kBlocks[level];
    } else {
      out += kAscii[level];
    }
  }
  return out;
}

}  // namespace

std::string golden_report_table(const GoldenReport& report, const TableOptions& options) {
  const FidelityRun& run = report.run;
  const GateEvaluation& ev = report.evaluation;
  std::string out;
  out += fmt::format("golden-validator {}: {}\n", report_util::command_text(report),
                     colored(report_util::verdict_word(report),
                             ev.summary.verdict == Verdict::kPass || is_empty_slice(report)
                                 ? Verdict::kPass
                                 : Verdict::kFail,
                             options.color));
  for (const ReportInput& in : run.inputs) {
    out += fmt::format("  {:<10} {}{}\n", in.role, in.path,
                       in.sha256.empty() ? std::string() : " (sha256 " + in.sha256.substr(0, 12) + ")");
  }
  const double p = report.policy.defaults.percentile.value_or(0);
  // Rows are token positions, or seeds for probe: say which, everywhere.
  const std::string axis = run.checks.empty() ? std::string("position") : run.checks.front().row_axis;
  out += fmt::format("  {:<10} {} (gated on {} over {}s)\n", "policy", report_util::policy_text(report.policy),
                     p == 0 ? std::string("the minimum") : fmt::format("percentile p{}", p), axis);
  out += fmt::format("  {:<10} golden-validator {}{}\n", "tool", report.tool_version,
                     report.command_line.empty()
                         ? std::string()
                         : ": " + report_util::command_line_text(report.command_line));
  if (const std::string slice = report_util::slice_text(report); !slice.empty()) {
    out += fmt::format("  {:<10} {}\n", "slice", slice);
  }
  if (options.list_shards) {
    for (const ReportShard& sh : run.shards) {
      out += fmt::format("  {:<10} {} {} (fingerprint {})\n", "shard", sh.id, sh.path, sh.fingerprint);
    }
  } else if (!run.shards.empty()) {
    out += fmt::format("  {:<10} {} executed{} (their fingerprints: -v, --json, --markdown)\n",
                       "shards", run.shards.size(),
                       report_util::is_regated(report) ? " by the saved run, not now" : "");
  }
  for (const ReportView& v : run.views) {
    out += fmt::format("  {:<10} {}: {}\n", "view", v.mode, v.answers);
    out += fmt::format("  {:<10} {}\n", "", report_util::feeds_text(v));
  }
  out += "\n";

  const std::vector<size_t> order = report_util::layer_order(run);
  size_t name_w = 10;
  for (const CheckResult& c : run.checks) name_w = std::max(name_w, c.identity.id().size());
  const std::string cos_stat = report_util::cosine_statistic(report);
  const bool mixed_stat = cos_stat == "statistic";
  out += fmt::format("  {:>5}  {}  {:<11} {:>{}} {:>5}  {:<20} {:>9}  {}\n", "layer",
                     pad("checkpoint", name_w), "kind", mixed_stat ? "cosine" : "cos " + cos_stat,
                     mixed_stat ? 13 : 9, axis == "seed" ? "@seed" : "worst", "norm ratio", "rel_l2",
                     "verdict");
  for (size_t i : order) {
    const CheckResult& c = run.checks[i];
    const CheckVerdict& v = ev.checks[i];
    const MetricVerdict* cos = report_util::find_metric(v, Metric::kCosine);
    const MetricVerdict* norm = report_util::find_metric(v, Metric::kNormRatio);
    const MetricVerdict* rel = report_util::find_metric(v, Metric::kRelL2);
    const std::string norm_text =
        norm ? "[" + fmt_gated(norm, norm->value, 4) + ", " + fmt_gated(norm, norm->value_upper, 4) + "]" : "-";
    std::string worst = cos && cos->worst_position >= 0 ? std::to_string(cos->worst_position) : "-";
    if (cos && cos->worst_row >= 0 && static_cast<size_t>(cos->worst_row) < c.rows.size()) {
      const RowResult& wr = c.rows[static_cast<size_t>(cos->worst_row)];
      // Seed rows: "3" (seed 3) or "3:5" (seed 3, position 5).
      if (wr.seed) worst = wr.position >= 0 ? fmt::format("{}:{}", *wr.seed, wr.position) : std::to_string(*wr.seed);
    }
    out += fmt::format("  {:>5}  {}  {:<11} {:>{}} {:>5}  {:<20} {:>9}  {}\n",
                       report_util::layer_text(c.identity), pad(c.identity.id(), name_w),
                       c.identity.kind, report_util::cosine_value_text(report, i),
                       mixed_stat ? 13 : 9, worst, norm_text,
                       fmt_gated(rel, rel ? rel->value : std::nullopt), colored(verdict_name(v.verdict), v.verdict, options.color));
    if (v.verdict != Verdict::kPass && !v.message.empty()) {
      out += fmt::format("         -> {}\n", v.message);
    }
    if (!v.unstable_note.empty()) out += fmt::format("         -> {}\n", v.unstable_note);
  }

  for (size_t i : order) {
    const CheckResult& c = run.checks[i];
    if (c.identity.kind != "logits" && !options.all_positions) continue;
    if (c.rows.size() <= 1 && c.position_axis < 0) continue;
    const CheckVerdict& v = ev.checks[i];
    const bool logits = c.identity.kind == "logits";
    const MetricVerdict* cos = report_util::find_metric(v, Metric::kCosine);
    const MetricVerdict* norm = report_util::find_metric(v, Metric::kNormRatio);
    const MetricVerdict* rel = report_util::find_metric(v, Metric::kRelL2);
    out += fmt::format("\n  {} per {}:\n", c.identity.id(), c.row_axis);
    if (logits) {
      out += fmt::format("  {:>5}  {:>9} {:>8} {:>5} {:>6} {:>10}  {}\n", c.row_axis == "seed" ? "seed" : "pos", "cosine", "norm",
                         "top1", fmt::format("top{}", run.options.topk), "kl", "verdict");
    } else {
      out += fmt::format("  {:>5}  {:>9} {:>8} {:>9}  {}\n", c.row_axis == "seed" ? "seed" : "pos", "cosine", "norm", "rel_l2",
                         "verdict");
    }
    for (size_t r = 0; r < c.rows.size(); ++r) {
      const RowResult& row = c.rows[r];
      std::string pos = row.position >= 0 ? std::to_string(row.position) : "-";
      if (row.seed) pos = row.position >= 0 ? fmt::format("{}:{}", *row.seed, row.position) : std::to_string(*row.seed);
      const Verdict rv = v.rows[r].verdict;
      if (logits) {
        const auto& t1 = row.value(Metric::kTop1);
        out += fmt::format("  {:>5}  {:>9} {:>8} {:>5} {:>6} {:>10}  {}\n", pos,
                           fmt_gated(cos, row.value(Metric::kCosine)), fmt_gated(norm, row.value(Metric::kNormRatio), 4),
                           t1 ? (*t1 >= 1.0 ? "yes" : (*t1 <= 0.0 ? "no" : fmt_num(t1, 2))) : "-",
                           fmt_num(row.value(Metric::kTopkOverlap), 2), fmt_num(row.value(Metric::kKl), 6),
                           colored(verdict_name(rv), rv, options.color));
      } else {
        out += fmt::format("  {:>5}  {:>9} {:>8} {:>9}  {}\n", pos,
                           fmt_gated(cos, row.value(Metric::kCosine)), fmt_gated(norm, row.value(Metric::kNormRatio), 4),
                           fmt_gated(rel, row.value(Metric::kRelL2)), colored(verdict_name(rv), rv, options.color));
      }
    }
  }

  // Trend over layered checks, one line per view: where does the gated cosine start to drop?
  // It shows the statistic the gate used and "first below" is the gate's own cosine verdict,
  // so the trend, the table and the summary name the same layer.
  for (const std::vector<size_t>& group : report_util::view_groups(run)) {
    std::vector<size_t> layered;
    for (size_t i : group) {
      if (run.checks[i].identity.layer) layered.push_back(i);
    }
    if (layered.size() < 2) continue;
    std::vector<std::optional<double>> values;
    double threshold = 1.0;
    std::optional<size_t> first_below;
    std::string stat = "min";
    for (size_t i : layered) {
      const MetricVerdict* cos = report_util::find_metric(ev.checks[i], Metric::kCosine);
      threshold = std::min(threshold, report_util::cosine_threshold(report, i));
      values.push_back(cos ? cos->value : std::nullopt);
      if (cos) stat = cos->statistic;
      if (!first_below && cos && cos->verdict == Verdict::kFail) first_below = i;
    }
    const std::string view = report_util::labels_text(run.checks[layered.front()].identity);
    const std::string range = fmt::format("layers {}..{}", *run.checks[layered.front()].identity.layer,
                                          *run.checks[layered.back()].identity.layer);
    out += fmt::format("\n  trend  {}cosine {}, {}: {}  ", view.empty() ? "" : "[" + view + "] ",
                       mixed_stat ? std::string("statistic") : stat, range,
                       sparkline(values, threshold, options.unicode));
    if (first_below) {
      const CheckIdentity& id = run.checks[*first_below].identity;
      out += fmt::format("first below threshold at layer {} ({})\n", *id.layer, id.id());
    } else {
      out += "no layer below threshold\n";
    }
  }

  if (!run.reference_only.empty()) {
    out += fmt::format("\n  not in candidate: {}\n", fmt::join(run.reference_only, ", "));
  }
  if (!run.candidate_only.empty()) {
    out += fmt::format("  not in reference (ignored): {}\n", fmt::join(run.candidate_only, ", "));
  }
  if (!report.views_finding.empty()) out += fmt::format("\n  {}\n", report.views_finding);
  out += fmt::format("\n{}: {}\n",
                     colored(report_util::verdict_word(report),
                             ev.summary.verdict == Verdict::kPass || is_empty_slice(report)
                                 ? Verdict::kPass
                                 : Verdict::kFail,
                             options.color),
                     ev.summary.message);
  return out;
}

}  // namespace sg
