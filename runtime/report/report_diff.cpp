// diff_reports() (report_diff.h): regressions between two reports of one tool. It reads both
// tools' reports, so it lives with the report code (report/), above golden/ and diagnose/.
#include "shardgate/report_diff.h"

#include "shardgate/golden_report.h"
#include "shardgate/residency_report.h"
#include "shardgate/io.h"

#include "core/json.h"
#include "report/envelope_json.h"
#include "report/golden_report_read.h"
#include "report/residency_report_read.h"
#include "report/shard_names.h"
#include "shardgate/limits.h"

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace sg {
namespace {

using Json = nlohmann::json;

// Every fidelity metric (metrics.def), and the two ane-validator quantities.
const std::set<std::string>& known_tolerances() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k = {"residency_pct", "placement"};
    for (const MetricInfo& m : metric_table()) k.insert(m.name);
    return k;
  }();
  return keys;
}

// "cosine, norm_ratio, ..., residency_pct, placement": the known quantities in table order.
std::string quantity_list() {
  std::string out;
  for (const MetricInfo& m : metric_table()) out += std::string(m.name) + ", ";
  return out + "residency_pct, placement";
}

std::string num_text(double v) {
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.6g}", v);
}

// The change beside the tolerance it exceeds, with digits enough to read as larger: a drop of
// 0.0020000001 printed "worse by 0.002 > tolerance 0.002".
std::string num_beyond(double worse_by, double tolerance) {
  for (int d = 6; d <= 17; ++d) {
    const std::string s = fmt::format("{:.{}g}", worse_by, d);
    if (std::strtod(s.c_str(), nullptr) > tolerance) return s;
  }
  return fmt::format("{}", worse_by);
}

// Adds a row when the value changed; marks it a regression beyond the tolerance for `metric`.
void compare_value(ReportDiff& d, const RegressionPolicy& p, const std::string& item,
                   const std::string& what, const std::string& metric, double old_v, double new_v,
                   double worse_by) {
  ++d.compared;
  if (old_v == new_v || (std::isnan(old_v) && std::isnan(new_v))) return;
  DiffRow r{item, what, num_text(old_v), num_text(new_v), worse_by, false, ""};
  auto t = p.tolerances.find(metric);
  if (worse_by > 0 && t != p.tolerances.end() && worse_by > t->second.value) {
    r.regression = true;
    r.why = fmt::format("worse by {} > tolerance {} for {}", num_beyond(worse_by, t->second.value),
                        fmt::format("{}", t->second.value), metric);
  }
  d.rows.push_back(std::move(r));
}

std::string check_key(const CheckIdentity& id) {
  return id.shard.empty() ? id.id() : id.shard + "/" + id.id();
}

int64_t nonfinite_rows(const CheckResult& c) {
  return std::count_if(c.rows.begin(), c.rows.end(), [](const RowResult& r) { return r.nonfinite; });
}

// How far a metric's statistic is from ideal, in the metric's own direction: larger is worse.
double badness(const MetricVerdict& m) {
  const double v = m.value.value_or(std::nan(""));
  if (m.metric == Metric::kNormRatio) {
    return std::max(std::fabs(v - 1.0), std::fabs(m.value_upper.value_or(v) - 1.0));
  }
  return metric_higher_is_better(m.metric) ? -v : v;
}

Status diff_golden(ReportDiff& d, const Json& old_json, const Json& new_json,
                   const RegressionPolicy& p) {
  SG_ASSIGN_OR_RETURN(GoldenReport old_r, golden_report_from_json(old_json, d.old_path));
  SG_ASSIGN_OR_RETURN(GoldenReport new_r, golden_report_from_json(new_json, d.new_path));
  // Checks pair by identity; one identity twice in a report (merged probes of two candidates
  // sharing a file name) would pair two ways, so it is refused rather than one copy dropped.
  auto keys_of = [](const GoldenReport& r, const std::string& file) -> Result<std::map<std::string, size_t>> {
    std::map<std::string, size_t> keys;
    for (size_t i = 0; i < r.run.checks.size(); ++i) {
      const std::string key = check_key(r.run.checks[i].identity);
      SG_CHECK(keys.emplace(key, i).second, ErrorCode::kUsage,
               "diff: {} holds check {} twice (checks {} and {}), so it cannot be paired with the "
               "other report's", file, key, keys[key], i);
    }
    return keys;
  };
  SG_ASSIGN_OR_RETURN(const auto old_checks, keys_of(old_r, d.old_path));
  SG_ASSIGN_OR_RETURN(const auto new_checks, keys_of(new_r, d.new_path));
  for (size_t i = 0; i < new_r.run.checks.size(); ++i) {  // in the report's order
    const std::string key = check_key(new_r.run.checks[i].identity);
    auto o = old_checks.find(key);
    if (o == old_checks.end()) {
      d.rows.push_back({key, "check", "absent", "present", 0, false, ""});
      continue;
    }
    const CheckVerdict& ov = old_r.evaluation.checks[o->second];
    const CheckVerdict& nv = new_r.evaluation.checks[i];
    ++d.compared;
    if (ov.verdict != nv.verdict) {
      const bool worse = ov.verdict == Verdict::kPass;
      d.rows.push_back({key, "verdict", verdict_name(ov.verdict), verdict_name(nv.verdict),
                        worse ? 1.0 : 0.0, worse, worse ? "the check passed and now does not" : ""});
    }
    // Rows holding NaN or Inf: the statistics skip them (each fails on its own), so a check that
    // already failed and now overflows read as unchanged, or even better, on its finite rows.
    const int64_t old_nonfinite = nonfinite_rows(old_r.run.checks[o->second]);
    const int64_t new_nonfinite = nonfinite_rows(new_r.run.checks[i]);
    ++d.compared;
    if (old_nonfinite != new_nonfinite) {
      const bool worse = new_nonfinite > old_nonfinite;
      d.rows.push_back({key, "rows with NaN or Inf", std::to_string(old_nonfinite),
                        std::to_string(new_nonfinite), static_cast<double>(new_nonfinite - old_nonfinite),
                        worse, worse ? "more rows hold a non-finite value: no tolerance admits one" : ""});
    }
    for (const MetricVerdict& nm : nv.metrics) {
      auto om = std::find_if(ov.metrics.begin(), ov.metrics.end(), [&](const MetricVerdict& m) {
        return m.metric == nm.metric && m.statistic == nm.statistic;
      });
      if (om == ov.metrics.end() || !om->value || !nm.value) continue;
      const std::string name = metric_name(nm.metric);
      const double worse_by = badness(nm) - badness(*om);
      if (nm.metric == Metric::kNormRatio) {
        compare_value(d, p, key, name + " " + nm.statistic + " (distance from 1)", name,
                      badness(*om), badness(nm), worse_by);
      } else {
        compare_value(d, p, key, name + " " + nm.statistic, name, *om->value, *nm.value, worse_by);
      }
    }
  }
  for (const auto& [key, i] : old_checks) {
    if (new_checks.count(key)) continue;
    d.rows.push_back({key, "check", "present", "absent", 1.0, true,
                      "a check of the old report is missing from the new one"});
  }
  return Status::ok();
}

// Placements from best to worst for the ANE: a move to a larger rank is a move away.
int placement_rank(const std::string& p) {
  if (p == "ANE") return 0;
  if (p == "ANE_RISK") return 1;
  if (p == "NO_DEVICE") return -1;  // compile-time: never counts
  return 2;                          // CPU, GPU, GPU_OR_CPU, UNKNOWN, ...
}

// An op's identity across two reports: function and first output (or statement index).
std::string op_key(const OpPlacement& o) {
  return o.function + ":" + (o.outputs.empty() ? "#" + std::to_string(o.index) : o.outputs[0]);
}

// Both reports are read whole by the typed reader merge uses (residency_report_from_json):
// a report it would refuse (a missing field, a field of another type, an unknown placement)
// is a kFormat error naming the file and the place, exit 2, and the quantities compared are
// the ones the report's gate was computed from (the shard verdict from its gate and error,
// not a free-standing string).
Status diff_ane(ReportDiff& d, const Json& oj, const Json& nj, const RegressionPolicy& p) {
  SG_ASSIGN_OR_RETURN(const ResidencyReport old_r, residency_report_from_json(oj, d.old_path));
  SG_ASSIGN_OR_RETURN(const ResidencyReport new_r, residency_report_from_json(nj, d.new_path));
  // Shards pair by the end of their paths (shard_names.h): reports written from other
  // directories still pair, and shards sharing a file name pair by the directories that tell
  // them apart.
  SG_ASSIGN_OR_RETURN(const shard_names::Pairing pairs,
                      shard_names::pair(shard_paths(old_r), d.old_path, shard_paths(new_r), d.new_path));
  const auto tol = p.tolerances.find("placement");
  for (size_t i = 0; i < new_r.shards.size(); ++i) {
    const ShardCheck* ns = &new_r.shards[i];
    const std::string& name = pairs.name_of_new[i];
    if (!pairs.old_of_new[i]) {
      d.rows.push_back({name, "shard", "absent", "present", 0, false, ""});
      continue;
    }
    const ShardCheck& os = old_r.shards[*pairs.old_of_new[i]];
    ++d.compared;
    const std::string ov = shard_verdict(os), nv = shard_verdict(*ns);
    if (ov != nv) {
      const bool worse = ov == "pass";
      d.rows.push_back({name, "verdict", ov, nv, worse ? 1.0 : 0.0, worse,
                        worse ? "the shard passed and now does not" : ""});
    }
    if (os.summary.residency_pct && ns->summary.residency_pct) {
      const double op = *os.summary.residency_pct, np = *ns->summary.residency_pct;
      compare_value(d, p, name, "residency_pct", "residency_pct", op, np, op - np);
    }
    std::map<std::string, const OpPlacement*> old_ops;
    for (const OpPlacement& op : os.ops) old_ops[op_key(op)] = &op;
    for (const OpPlacement& op : ns->ops) {
      const std::string key = op_key(op);
      auto prev = old_ops.find(key);
      if (prev == old_ops.end()) continue;
      const std::string before = placement_name(prev->second->placement);
      const std::string after = placement_name(op.placement);
      ++d.compared;
      if (before == after) continue;
      const int moved = placement_rank(after) - placement_rank(before);
      DiffRow r{name, fmt::format("op {} {}", key, op.type), before, after,
                static_cast<double>(std::max(moved, 0)), false, ""};
      if (moved > 0 && tol != p.tolerances.end() && moved > tol->second.value) {
        r.regression = true;
        r.why = fmt::format("moved away from the ANE ({} -> {}, rule {})", before, after,
                            op.rule_id.empty() ? "?" : op.rule_id);
      }
      d.rows.push_back(std::move(r));
    }
  }
  for (size_t j = 0; j < old_r.shards.size(); ++j) {
    if (pairs.old_paired[j]) continue;
    d.rows.push_back({pairs.name_of_old[j], "shard", "present", "absent", 1.0, true,
                      "a shard of the old report is missing from the new one"});
  }
  return Status::ok();
}

}  // namespace

int64_t ReportDiff::regressions() const {
  return std::count_if(rows.begin(), rows.end(), [](const DiffRow& r) { return r.regression; });
}

int64_t ReportDiff::worse() const {
  return std::count_if(rows.begin(), rows.end(), [](const DiffRow& r) { return r.worse_by > 0; });
}

Result<RegressionPolicy> load_regression_policy(const std::string& path) {
  SG_ASSIGN_OR_RETURN(Json doc, json_util::read(path, limits::kGateFileBytes, "regression gate"));
  RegressionPolicy p;
  p.path = path;
  SG_ASSIGN_OR_RETURN(p.sha256, sha256_file(path));
  const Json& j = doc;
  SG_CHECK(j.is_object(), ErrorCode::kFormat, "{}: a regression gate is a JSON object", path);
  SG_ASSIGN_OR_RETURN(const std::string schema, json_util::get_string_or(j, "schema", "", path, ""));
  SG_CHECK(schema == kRegressionGateSchema, ErrorCode::kFormat,
           "{}: 'schema' must be \"{}\"", path, kRegressionGateSchema);
  for (const auto& [key, v] : j.items()) {
    SG_CHECK(key == "schema" || key == "description" || key == "tolerances" || key == "baseline",
             ErrorCode::kFormat, "{}: unknown key '{}' (schema, description, tolerances, baseline)",
             path, key);
  }
  if (j.contains("baseline")) {
    const Json& b = j["baseline"];
    SG_CHECK(b.is_object() && b.contains("report") && b["report"].is_string() &&
                 !b["report"].get<std::string>().empty(),
             ErrorCode::kFormat, "{}: baseline.report must name a JSON report", path);
    SG_CHECK(b.contains("reason") && b["reason"].is_string() && !b["reason"].get<std::string>().empty(),
             ErrorCode::kFormat, "{}: baseline.reason is required (why this report is the baseline)",
             path);
    for (const auto& [k2, v2] : b.items()) {
      SG_CHECK(k2 == "report" || k2 == "reason", ErrorCode::kFormat,
               "{}: baseline: unknown key '{}' (report, reason)", path, k2);
    }
    // Relative to the gate file, so the gate and its baseline move together.
    const std::filesystem::path report(b["report"].get<std::string>());
    p.baseline = report.is_absolute() ? report.string()
                                      : (std::filesystem::path(path).parent_path() / report).lexically_normal().string();
    p.baseline_reason = b["reason"].get<std::string>();
  }
  SG_CHECK(j.contains("tolerances") && j["tolerances"].is_object(), ErrorCode::kFormat,
           "{}: 'tolerances' must be an object", path);
  for (const auto& [key, t] : j["tolerances"].items()) {
    SG_CHECK(known_tolerances().count(key), ErrorCode::kFormat,
             "{}: tolerances.{}: unknown quantity ({})", path, key, quantity_list());
    SG_CHECK(t.is_object() && t.contains("value") && t["value"].is_number() &&
                 t["value"].get<double>() >= 0 && std::isfinite(t["value"].get<double>()),
             ErrorCode::kFormat, "{}: tolerances.{}.value must be a number >= 0", path, key);
    SG_CHECK(t.contains("reason") && t["reason"].is_string() && !t["reason"].get<std::string>().empty(),
             ErrorCode::kFormat, "{}: tolerances.{}.reason is required", path, key);
    for (const auto& [k2, v2] : t.items()) {
      SG_CHECK(k2 == "value" || k2 == "reason", ErrorCode::kFormat,
               "{}: tolerances.{}: unknown key '{}' (value, reason)", path, key, k2);
    }
    p.tolerances[key] = {t["value"].get<double>(), t["reason"].get<std::string>()};
  }
  return p;
}

Result<ReportDiff> diff_reports(const std::string& old_path, const std::string& new_path,
                                const RegressionPolicy& policy) {
  ReportDiff d;
  d.old_path = old_path;
  d.new_path = new_path;
  SG_ASSIGN_OR_RETURN(std::string old_text, read_file(old_path, limits::kReportBytes, "report"));
  SG_ASSIGN_OR_RETURN(std::string new_text, read_file(new_path, limits::kReportBytes, "report"));
  d.old_sha256 = sha256_hex(std::as_bytes(std::span<const char>(old_text.data(), old_text.size())));
  d.new_sha256 = sha256_hex(std::as_bytes(std::span<const char>(new_text.data(), new_text.size())));
  SG_ASSIGN_OR_RETURN(Json old_json, json_util::parse(old_text, old_path));
  SG_ASSIGN_OR_RETURN(Json new_json, json_util::parse(new_text, new_path));
  const Json* oj = &old_json;
  const Json* nj = &new_json;
  SG_ASSIGN_OR_RETURN(ReportEnvelope oe, read_envelope(old_json, old_path));
  SG_ASSIGN_OR_RETURN(ReportEnvelope ne, read_envelope(new_json, new_path));
  for (const auto& [e, path] : {std::pair{&oe, &old_path}, std::pair{&ne, &new_path}}) {
    SG_CHECK(e->kind == kGoldenReportKind || e->kind == kResidencyReportKind, ErrorCode::kUsage,
             "{}: a {} report ({}): diff compares the gate reports of golden-validator run / "
             "compare / probe or of ane-validator",
             *path, e->kind, e->command);
  }
  const std::string ot = oe.tool, nt = ne.tool;
  SG_CHECK(ot == nt, ErrorCode::kUsage, "{} is a {} report but {} is a {} report: diff compares "
           "reports of one tool", old_path, ot, new_path, nt);
  d.tool = ot;
  if (ot == "golden-validator") {
    SG_TRY(diff_golden(d, *oj, *nj, policy));
  } else {
    SG_TRY(diff_ane(d, *oj, *nj, policy));
  }
  return d;
}

}  // namespace sg
