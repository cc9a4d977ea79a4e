// Shared helpers of the golden report renderers (golden_report_util.h).
#include "report/golden_report_util.h"

#include <algorithm>
#include <tuple>

namespace sg::report_util {

std::string fmt_num(std::optional<double> v, int digits) {
  if (!v) return "-";
  if (std::isnan(*v)) return "nan";
  if (std::isinf(*v)) return *v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", *v, digits);
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

std::optional<double> min_cosine(const CheckResult& c) {
  std::optional<double> m;
  for (const RowResult& r : c.rows) {
    if (r.degenerate || r.nonfinite) continue;
    if (const auto& v = r.value(Metric::kCosine)) m = m ? std::min(*m, *v) : *v;
  }
  return m;
}

double cosine_threshold(const GoldenReport& report, size_t check) {
  const ResolvedThresholds t = resolve_thresholds(report.policy, report.run.checks[check].identity);
  if (const auto& c = t.at(Metric::kCosine); c && c->bound) return *c->bound;
  return 0.97;
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

std::string layer_text(const CheckIdentity& id) {
  return id.layer ? std::to_string(*id.layer) : std::string("-");
}

}  // namespace sg::report_util
