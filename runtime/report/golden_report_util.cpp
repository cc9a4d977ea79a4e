// Shared helpers of the golden report renderers (golden_report_util.h).
#include "report/golden_report_util.h"

#include <filesystem>

#include <algorithm>
#include <tuple>

namespace sg::report_util {

std::string fmt_num(std::optional<double> v, int digits) {
  if (!v) return "-";
  if (std::isnan(*v)) return "nan";
  if (std::isinf(*v)) return *v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", *v, digits);
}

std::string fmt_gated(const MetricVerdict* mv, std::optional<double> v, int digits) {
  if (!v || !mv) return fmt_num(v, digits);
  return gated_value_text(mv->metric, *v, mv->threshold, digits, true);
}

const MetricVerdict* find_metric(const CheckVerdict& v, Metric m) {
  for (const MetricVerdict& mv : v.metrics) {
    if (mv.metric == m) return &mv;
  }
  return nullptr;
}

std::vector<size_t> layer_order(const FidelityRun& run) {
  std::vector<size_t> idx(run.checks.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const auto& la = run.checks[a].identity.layer;
    const auto& lb = run.checks[b].identity.layer;
    return std::make_tuple(la ? 0 : 1, la.value_or(0)) < std::make_tuple(lb ? 0 : 1, lb.value_or(0));
  });
  return idx;
}

std::optional<double> gated_cosine(const GoldenReport& report, size_t i) {
  const MetricVerdict* mv = find_metric(report.evaluation.checks[i], Metric::kCosine);
  return mv ? mv->value : std::nullopt;
}

std::string cosine_statistic(const GoldenReport& report) {
  std::string stat;
  for (const CheckVerdict& v : report.evaluation.checks) {
    const MetricVerdict* mv = find_metric(v, Metric::kCosine);
    if (!mv) continue;
    if (stat.empty()) {
      stat = mv->statistic;
    } else if (stat != mv->statistic) {
      return "statistic";
    }
  }
  return stat.empty() ? "min" : stat;
}

std::string cosine_value_text(const GoldenReport& report, size_t i, int digits) {
  const MetricVerdict* mv = find_metric(report.evaluation.checks[i], Metric::kCosine);
  if (!mv) return "-";
  std::string text = fmt_gated(mv, mv->value, digits);
  if (cosine_statistic(report) == "statistic") text += " " + mv->statistic;
  return text;
}

std::string labels_text(const CheckIdentity& id) {
  std::string out;
  for (const auto& [k, v] : id.labels) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

std::vector<std::vector<size_t>> view_groups(const FidelityRun& run) {
  std::vector<std::string> keys;
  std::vector<std::vector<size_t>> groups;
  for (size_t i : layer_order(run)) {
    const std::string key = labels_text(run.checks[i].identity);
    size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      groups.emplace_back();
    }
    groups[g].push_back(i);
  }
  return groups;
}

double cosine_threshold(const GoldenReport& report, size_t check) {
  const ResolvedThresholds t = resolve_thresholds(report.policy, report.run.checks[check].identity);
  if (const auto& c = t.at(Metric::kCosine); c && c->bound) return *c->bound;
  return 0.97;
}



std::string policy_note(const GatePolicy& policy) {
  return policy.adjusted_on_command_line ? std::string(" (") + kAdjustedOnCommandLine + ")"
                                         : std::string();
}

std::string policy_text(const GatePolicy& policy) { return policy.source + policy_note(policy); }

bool is_regated(const GoldenReport& report) {
  return std::any_of(report.run.inputs.begin(), report.run.inputs.end(),
                     [](const ReportInput& in) { return in.role == "report"; });
}

std::string command_text(const GoldenReport& report) {
  return is_regated(report) ? "regate of a saved " + report.run.command + " report" : report.run.command;
}

std::string command_line_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string feeds_text(const ReportView& view) {
  std::string golden;
  size_t own = 0, inputs = 0;
  for (const StepFeed& f : view.feeds) {
    if (f.source == "golden") {
      golden += fmt::format("{}{}.{} <- golden '{}'", golden.empty() ? "" : ", ", f.step, f.input, f.golden);
    } else if (f.source == "chain output") {
      ++own;
    } else {
      ++inputs;
    }
  }
  std::string out = golden.empty() ? std::string("no input replaced by a golden") : golden;
  out += fmt::format("; {} input{} read the chain's own outputs", own, own == 1 ? "" : "s");
  if (inputs) out += fmt::format(", {} the chain inputs", inputs);
  return out;
}

std::string UnstableRow::text() const {
  return fmt::format("{}: unstable (the FP16 baseline moves to cosine {} under a tiny input "
                     "perturbation, margin {:+.4g} to min_cosine {}): excluded, not quantization "
                     "error",
                     place, fmt_num(stability_cosine, 4), stability_cosine - bound, fmt_num(bound, 4));
}

std::vector<UnstableRow> unstable_rows(const GoldenReport& report, size_t i) {
  std::vector<UnstableRow> out;
  const CheckResult& c = report.run.checks[i];
  const CheckVerdict& v = report.evaluation.checks[i];
  for (size_t r = 0; r < v.rows.size() && r < c.rows.size(); ++r) {
    if (v.rows[r].verdict != Verdict::kUnstable) continue;
    UnstableRow u;
    u.row = r;
    u.place = row_place(c.rows[r]);
    u.stability_cosine = c.rows[r].stability_cosine.value_or(std::nan(""));
    u.bound = cosine_threshold(report, i);
    out.push_back(u);
  }
  return out;
}

std::string layer_text(const CheckIdentity& id) {
  return id.layer ? std::to_string(*id.layer) : std::string("-");
}

std::string verdict_word(const GoldenReport& report) {
  if (is_empty_slice(report)) return "EMPTY SLICE";
  return report.evaluation.summary.verdict == Verdict::kPass ? "PASS" : "FAIL";
}

std::string slice_text(const GoldenReport& report) {
  const auto& slice = report.run.slice;
  if (!slice || slice->count <= 1) return "";
  std::vector<int64_t> groups;
  std::vector<std::string> steps;
  for (const SliceGroup& g : slice->groups) {
    groups.push_back(g.index);
    steps.insert(steps.end(), g.steps.begin(), g.steps.end());
  }
  return fmt::format("slice {} of {} (CI fan-out): teacher-forced step groups [{}] of {} (steps {})",
                     slice->index, slice->count, fmt::join(groups, ", "), slice->groups_total,
                     steps.empty() ? std::string("none") : fmt::format("{}", fmt::join(steps, ", ")));
}

std::string junit_suite(const GoldenReport& report) {
  // "a/b/chain_int8.json" -> "chain_int8"; a directory ("dumps/cand/") keeps its name.
  auto stem = [](const std::string& path) {
    const std::filesystem::path p(path);
    return (p.has_filename() ? p : p.parent_path()).stem().string();
  };
  std::string subject;
  for (const char* role : {"chain", "candidate"}) {
    for (const ReportInput& in : report.run.inputs) {
      if (subject.empty() && in.role == role) subject = stem(in.path);
    }
  }
  if (subject.empty() && !report.run.shards.empty()) subject = stem(report.run.shards.front().path);
  const std::string suite = "golden-validator." + report.run.command;
  return subject.empty() ? suite : suite + "." + subject;
}

}  // namespace sg::report_util
