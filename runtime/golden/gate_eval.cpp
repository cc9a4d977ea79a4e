// Gate evaluation (gate_policy.h): thresholds applied to measured checks, verdicts per metric,
// per row and per check, and the run summary with the first failing layer and position.
#include "shardgate/gate_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "shardgate/dtype.h"
#include "shardgate/metrics.h"

namespace sg {
namespace {

// Percentile that stays defined next to infinite values (an identical row has SNR +inf): with
// an infinite neighbour the nearest rank is taken instead of interpolating inf − x.
double robust_percentile(const std::vector<double>& values, double p) {
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  if (std::isinf(v[lo]) || std::isinf(v[hi])) {
    return rank - static_cast<double>(lo) < 0.5 ? v[lo] : v[hi];
  }
  return percentile(std::move(v), p);
}

enum class Side { kLow, kHigh };

// The gated statistic at one end: the minimum (p = 0) or the p-th percentile at the low end;
// the maximum or the (100 − p)-th percentile at the high end.
double statistic(const std::vector<double>& values, double p, Side side) {
  if (p == 0) {
    return side == Side::kLow ? *std::min_element(values.begin(), values.end())
                              : *std::max_element(values.begin(), values.end());
  }
  return robust_percentile(values, side == Side::kLow ? p : 100.0 - p);
}

std::string stat_label(double p, Side side) {
  if (p == 0) return side == Side::kLow ? "min" : "max";
  return fmt::format("p{}", side == Side::kLow ? p : 100.0 - p);
}

bool is_lower_bounded(Metric m) { return metric_higher_is_better(m); }

// Whether one value violates the threshold (NaN always does).
bool violates(Metric m, double v, const Threshold& t) {
  if (std::isnan(v)) return true;
  if (m == Metric::kNormRatio) {
    return (t.bound && v < *t.bound) || (t.upper && v > *t.upper);
  }
  if (!t.bound) return false;
  return is_lower_bounded(m) ? v < *t.bound : v > *t.bound;
}

std::string fmt_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

// A threshold exactly as given (the shortest text that reads back as the same double): a
// rounded threshold could meet the rounded value it is printed beside.
std::string bound_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

std::string threshold_text(Metric m, const Threshold& t) {
  if (m == Metric::kNormRatio) {
    return fmt::format("within [{}, {}]", bound_text(t.bound.value_or(0)),
                       bound_text(t.upper.value_or(std::numeric_limits<double>::infinity())));
  }
  return fmt::format("{} {}", is_lower_bounded(m) ? ">=" : "<=", bound_text(t.bound.value_or(0)));
}

// A gated statistic in a verdict message: six significant digits, more near the threshold.
std::string stat_value(const MetricVerdict& mv, std::optional<double> v) {
  if (!v) return "nan";
  return gated_value_text(mv.metric, *v, mv.threshold, 6, false);
}

// "min 0.957965 at position 6", "p10 0.9612 (worst 0.957965 at position 6)", "rate 0.5": the
// gated statistic with its name, and a place only next to that place's own value. `place` is
// row_place() of the worst row ("position 6", "seed 3 position 6"), "" when it has none.
std::string statistic_text(const MetricVerdict& mv, std::optional<double> worst_value,
                           const std::string& place) {
  const std::string value =
      mv.metric == Metric::kNormRatio
          ? fmt::format("[{}, {}]", stat_value(mv, mv.value), stat_value(mv, mv.value_upper))
          : stat_value(mv, mv.value);
  std::string out = mv.statistic + " " + value;
  if (mv.metric == Metric::kTop1 || place.empty()) return out;
  const bool extreme = mv.statistic == "min" || mv.statistic == "max";
  if (extreme) return out + fmt::format(" at {}", place);
  if (worst_value) {
    return out + fmt::format(" (worst {} at {})", stat_value(mv, worst_value), place);
  }
  return out + fmt::format(" (worst at {})", place);
}

// row_place() of a row that has a place, else "".
std::string place_of(const CheckResult& check, int64_t row) {
  if (row < 0 || static_cast<size_t>(row) >= check.rows.size()) return std::string();
  const RowResult& r = check.rows[static_cast<size_t>(row)];
  return r.position >= 0 || r.seed ? row_place(r) : std::string();
}

std::optional<double> value_at(const CheckResult& check, Metric m, int64_t row) {
  if (row < 0 || static_cast<size_t>(row) >= check.rows.size()) return std::nullopt;
  return check.rows[static_cast<size_t>(row)].value(m);
}

// "4, 6, 7" (at most eight, then "… (N in all)"); probe rows name their seed: "seed 3 position 5".
std::string failing_positions(const CheckResult& check, const CheckVerdict& cv) {
  std::vector<std::string> ps;
  for (size_t i = 0; i < cv.rows.size(); ++i) {
    const Verdict v = cv.rows[i].verdict;
    const RowResult& r = check.rows[i];
    if ((v == Verdict::kFail || v == Verdict::kNonfinite) && (r.position >= 0 || r.seed)) {
      ps.push_back(r.seed ? row_place(r) : std::to_string(r.position));
    }
  }
  std::string out;
  for (size_t i = 0; i < ps.size() && i < 8; ++i) out += (i ? ", " : "") + ps[i];
  if (ps.size() > 8) out += fmt::format(", … ({} in all)", ps.size());
  return out;
}

CheckVerdict evaluate_check(const CheckResult& check, const ResolvedThresholds& th) {
  CheckVerdict cv;
  cv.percentile = th.percentile;
  cv.rows.resize(check.rows.size());

  // Input stability (probe): the baseline moving below the cosine gate under a tiny input
  // perturbation says the row measures a near tie, not quantization error.
  const std::optional<Threshold>& cos_gate = th.at(Metric::kCosine);
  const std::optional<double> stability_bound = cos_gate ? cos_gate->bound : std::nullopt;
  std::vector<std::string> unstable;
  std::vector<size_t> gated;  // indices of rows that count
  for (size_t i = 0; i < check.rows.size(); ++i) {
    const RowResult& row = check.rows[i];
    if (row.nonfinite) {
      cv.rows[i].verdict = Verdict::kNonfinite;
    } else if (row.degenerate) {
      cv.rows[i].verdict = Verdict::kDegenerate;
    } else if (row.stability_cosine && stability_bound && !(*row.stability_cosine >= *stability_bound)) {
      cv.rows[i].verdict = Verdict::kUnstable;
      ++cv.unstable_rows;
      unstable.push_back(fmt::format("{} (baseline moves to cosine {}, margin {:+.4g} to min_cosine {})",
                                     row_place(row), fmt_value(*row.stability_cosine),
                                     *row.stability_cosine - *stability_bound,
                                     fmt_value(*stability_bound)));
    } else {
      gated.push_back(i);
    }
  }
  if (!unstable.empty()) {
    cv.unstable_note = fmt::format("{} of {} rows unstable, excluded: {}", unstable.size(),
                                   check.rows.size(), fmt::join(unstable, "; "));
  }

  std::vector<std::string> failures;
  for (size_t mi = 0; mi < kMetricCount; ++mi) {
    const Metric m = static_cast<Metric>(mi);
    std::vector<double> values;
    std::vector<size_t> owners;
    for (size_t i : gated) {
      if (const auto& v = check.rows[i].value(m)) {
        values.push_back(*v);
        owners.push_back(i);
      }
    }
    if (values.empty()) continue;
    MetricVerdict mv;
    mv.metric = m;
    mv.threshold = th.at(m);
    if (m == Metric::kTop1) {
      // A rate: the share of rows whose argmax agrees.
      double sum = 0;
      for (double v : values) sum += v;
      mv.statistic = "rate";
      mv.value = sum / static_cast<double>(values.size());
    } else if (m == Metric::kNormRatio) {
      mv.statistic = th.percentile == 0 ? "min/max"
                                        : stat_label(th.percentile, Side::kLow) + "/" +
                                              stat_label(th.percentile, Side::kHigh);
      mv.value = statistic(values, th.percentile, Side::kLow);
      mv.value_upper = statistic(values, th.percentile, Side::kHigh);
    } else {
      const Side side = is_lower_bounded(m) ? Side::kLow : Side::kHigh;
      mv.statistic = stat_label(th.percentile, side);
      mv.value = statistic(values, th.percentile, side);
    }
    // Worst row: lowest / highest value; for the norm ratio the furthest from 1 in log scale.
    size_t worst = 0;
    auto badness = [&](double v) {
      if (std::isnan(v)) return std::numeric_limits<double>::infinity();
      if (m == Metric::kNormRatio)
        return v <= 0 ? std::numeric_limits<double>::infinity() : std::fabs(std::log(v));
      return is_lower_bounded(m) ? -v : v;
    };
    for (size_t k = 1; k < values.size(); ++k) {
      if (badness(values[k]) > badness(values[worst])) worst = k;
    }
    mv.worst_position = check.rows[owners[worst]].position;
    mv.worst_row = static_cast<int64_t>(owners[worst]);

    if (mv.threshold && (mv.threshold->bound || mv.threshold->upper)) {
      const Threshold& t = *mv.threshold;
      bool fail = violates(m, *mv.value, t);
      if (m == Metric::kNormRatio) fail = fail || violates(m, *mv.value_upper, t);
      mv.verdict = fail ? Verdict::kFail : Verdict::kPass;
      for (size_t k = 0; k < values.size(); ++k) {
        if (violates(m, values[k], t)) cv.rows[owners[k]].failed.push_back(m);
      }
      if (fail) {
        failures.push_back(fmt::format("{} {}, needs {} [{}: {}]", metric_name(m),
                                       statistic_text(mv, values[worst], place_of(check, mv.worst_row)),
                                       threshold_text(m, t),
                                       t.origin, t.reason));
      }
    } else {
      mv.threshold.reset();
      mv.verdict = Verdict::kNotGated;
    }
    cv.metrics.push_back(std::move(mv));
  }

  for (RowVerdict& rv : cv.rows) {
    if (rv.verdict == Verdict::kPass && !rv.failed.empty()) rv.verdict = Verdict::kFail;
  }
  // Judged by nothing: no metric it measured has a threshold (a policy may switch every one
  // off, as gates/fidelity.json does for an MoE pack's partial sum), or, with no row to
  // measure, the policy sets none at all. Such a check must not count as passed.
  bool any_threshold = false;
  for (size_t mi = 0; mi < kMetricCount; ++mi) {
    const std::optional<Threshold>& t = th.at(static_cast<Metric>(mi));
    any_threshold = any_threshold || (t && (t->bound || t->upper));
  }
  const bool judged = std::any_of(cv.metrics.begin(), cv.metrics.end(),
                                  [](const MetricVerdict& mv) { return mv.verdict != Verdict::kNotGated; });
  const bool not_gated = gated.empty() ? !any_threshold : !judged;
  for (size_t i = 0; i < cv.rows.size(); ++i) {
    if (cv.rows[i].verdict == Verdict::kFail || cv.rows[i].verdict == Verdict::kNonfinite) {
      cv.first_failing_position = check.rows[i].position;
      cv.first_failing_row = static_cast<int64_t>(i);
      break;
    }
  }

  if (check.nonfinite) {
    const NonfiniteLocation& n = *check.nonfinite;
    cv.verdict = Verdict::kNonfinite;
    cv.message = fmt::format("{} tensor of '{}' holds {} at flat index {}{}", n.tensor,
                             check.identity.id(), fmt_value(n.value), n.flat_index,
                             n.position >= 0 ? fmt::format(" (position {})", n.position)
                                             : std::string());
    cv.first_failing_position = n.position;
  } else if (not_gated) {
    cv.verdict = Verdict::kNotGated;
    cv.message = "no threshold applies to any metric of this check: measured and reported, judged by nothing";
    cv.first_failing_position = cv.first_failing_row = -1;
    for (RowVerdict& rv : cv.rows) {
      if (rv.verdict == Verdict::kPass) rv.verdict = Verdict::kNotGated;
    }
  } else if (gated.empty()) {
    cv.verdict = Verdict::kNoEvidence;
    cv.message = check.rows.empty()
                     ? "the tensor has no positions: no evidence"
                     : cv.unstable_rows == 0
                           ? fmt::format("all {} rows are degenerate (reference and candidate both "
                                         "zero): no evidence, the check cannot pass",
                                         check.rows.size())
                           : fmt::format("all {} rows are degenerate or unstable ({} unstable: the "
                                         "baseline itself moves more than the gate allows): no "
                                         "evidence, the check cannot pass",
                                         check.rows.size(), cv.unstable_rows);
  } else if (!failures.empty()) {
    cv.verdict = Verdict::kFail;
    cv.message = failures.front();
    for (size_t i = 1; i < failures.size(); ++i) cv.message += "; " + failures[i];
    if (cv.first_failing_position < 0) {
      for (const MetricVerdict& mv : cv.metrics) {
        if (mv.verdict == Verdict::kFail) {
          cv.first_failing_position = mv.worst_position;
          cv.first_failing_row = mv.worst_row;
          break;
        }
      }
    }
  } else {
    cv.verdict = Verdict::kPass;
  }
  return cv;
}

// Integer and bool tensors (token ids, argmax indices, masks) hold labels, not magnitudes:
// token 1800 in place of 1700 is another token however close the numbers are, yet its norm
// ratio (1.06) passed the default gate. So they must match exactly, a fixed rule no policy
// loosens: max_abs <= 0 on every row. Reports saved without dtypes keep their old verdicts.
bool holds_labels(const CheckResult& check) {
  for (const std::string* name : {&check.reference_dtype, &check.candidate_dtype}) {
    const std::optional<DType> t = dtype_from_name(*name);
    if (t && (dtype_is_integer(*t) || *t == DType::kBool)) return true;
  }
  return false;
}

void require_exact_match(ResolvedThresholds& th, const CheckResult& check) {
  Threshold t;
  t.bound = 0.0;
  t.origin = "fixed rule";
  t.reason = fmt::format("{} tensors hold ids or flags, which must match exactly",
                         check.reference_dtype);
  th.metrics[static_cast<size_t>(Metric::kMaxAbs)] = t;
}

// A NAME:VALUE threshold typed on the command line names this run's checkpoints (a gate file
// may cover many shards and match nothing here): one that matches no check is a typo, and
// passing without it would hide that the threshold the user asked for was never applied. A
// slice of a fanned-out run holds only some checkpoints, so it is not checked there.
Status check_command_line_overrides(const FidelityRun& run, const GatePolicy& policy) {
  if (run.slice) return Status::ok();
  for (const GateOverride& ov : policy.overrides) {
    if (ov.origin != "command line" || !ov.match.checkpoint) continue;
    const bool hit = std::any_of(run.checks.begin(), run.checks.end(),
                                 [&](const CheckResult& c) { return override_matches(ov.match, c.identity); });
    if (hit) continue;
    std::vector<std::string> names;
    for (const CheckResult& c : run.checks) names.push_back(c.identity.id());
    const std::string reason = ov.reason.rfind("command line: ", 0) == 0 ? ov.reason.substr(14) : ov.reason;
    return make_error(ErrorCode::kUsage, "{}: '{}' matches no checkpoint of this run (its checks: {})",
                      reason, *ov.match.checkpoint,
                      names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
  }
  return Status::ok();
}

}  // namespace

std::string gated_value_text(Metric m, double v, const std::optional<Threshold>& t, int digits,
                             bool fixed) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  auto text = [&](int d) {
    return fixed ? fmt::format("{:.{}f}", v, d) : fmt::format("{:.{}g}", v, d);
  };
  const bool gated = t && (t->bound || t->upper);
  std::string s = text(digits);
  if (!gated) return s;
  const bool fails = violates(m, v, *t);
  for (int d = digits; d <= 17; ++d) {
    s = text(d);
    if (violates(m, std::strtod(s.c_str(), nullptr), *t) == fails) return s;
  }
  return fmt::format("{}", v);  // the shortest text that reads back as v itself
}

std::string row_place(const RowResult& row) {
  if (row.seed) {
    return row.position >= 0 ? fmt::format("seed {} position {}", *row.seed, row.position)
                             : fmt::format("seed {}", *row.seed);
  }
  return row.position >= 0 ? fmt::format("position {}", row.position) : std::string("the tensor");
}

Result<GateEvaluation> evaluate_gate(const FidelityRun& run, const GatePolicy& policy,
                                     bool strict) {
  SG_CHECK(!policy.topk || *policy.topk == run.options.topk, ErrorCode::kUsage,
           "gate policy '{}' asks for top-k with k = {}, but the metrics were measured with "
           "k = {}: re-run with --topk {}", policy.source, policy.topk.value_or(0),
           run.options.topk, policy.topk.value_or(0));
  SG_TRY(check_command_line_overrides(run, policy));
  GateEvaluation ev;
  GateSummary& s = ev.summary;
  for (const CheckResult& check : run.checks) {
    ResolvedThresholds th = resolve_thresholds(policy, check.identity);
    if (holds_labels(check)) require_exact_match(th, check);
    if (!check.excluded.empty()) {
      // Measured and reported like any check, judged by nothing: no threshold applies.
      ResolvedThresholds none;
      none.percentile = th.percentile;
      none.percentile_origin = th.percentile_origin;
      CheckVerdict cv = evaluate_check(check, none);
      cv.verdict = Verdict::kExcluded;
      cv.message = fmt::format("excluded from the gate: {}, which a device does not reproduce",
                               check.excluded);
      cv.first_failing_position = cv.first_failing_row = -1;
      for (RowVerdict& rv : cv.rows) {
        if (rv.verdict == Verdict::kPass) rv.verdict = Verdict::kNotGated;
      }
      ev.checks.push_back(std::move(cv));
      ++s.excluded;
      continue;
    }
    ev.checks.push_back(evaluate_check(check, th));
    const CheckVerdict& cv = ev.checks.back();
    if (cv.verdict == Verdict::kNotGated) {
      ++s.not_gated;
      continue;
    }
    ++s.checks;
    if (cv.verdict == Verdict::kPass) {
      ++s.passed;
    } else {
      ++s.failed;
    }
    s.rows += static_cast<int64_t>(check.rows.size());
    for (const RowResult& r : check.rows) s.degenerate_rows += r.degenerate ? 1 : 0;
    s.unstable_rows += cv.unstable_rows;
  }

  // First failure in layer order: layered checks by layer (embed = -1 first), then checks
  // without a layer (logits, outputs) in report order.
  auto order_key = [&](size_t i) {
    const auto& layer = run.checks[i].identity.layer;
    return std::make_tuple(layer ? 0 : 1, layer.value_or(0), i);
  };
  for (size_t i = 0; i < ev.checks.size(); ++i) {
    if (ev.checks[i].verdict == Verdict::kPass || is_unjudged(ev.checks[i].verdict)) continue;
    if (!s.first_failure_check || order_key(i) < order_key(*s.first_failure_check)) {
      s.first_failure_check = i;
    }
  }

  std::string excluded =
      s.excluded == 0 ? std::string()
                      : fmt::format("{} check{} excluded: {} on ops a device does not reproduce",
                                    s.excluded, s.excluded == 1 ? "" : "s",
                                    s.excluded == 1 ? "it depends" : "they depend");
  if (s.not_gated > 0) {
    excluded += fmt::format("{}{} check{} measured, not gated (no threshold applies)",
                            excluded.empty() ? "" : "; ", s.not_gated, s.not_gated == 1 ? "" : "s");
  }
  if (s.checks == 0) {
    s.verdict = Verdict::kNoEvidence;
    s.message = s.excluded + s.not_gated == 0
                    ? std::string("nothing was compared: no evidence, the gate cannot pass")
                    : fmt::format("{} ({}): no evidence, the gate cannot pass",
                                  s.not_gated == 0 ? "every check was excluded" : "no check was judged",
                                  excluded);
  } else if (s.first_failure_check) {
    const size_t i = *s.first_failure_check;
    const CheckVerdict& cv = ev.checks[i];
    s.verdict = Verdict::kFail;
    s.first_failure_position = cv.first_failing_position;
    s.first_failure_row = cv.first_failing_row;
    for (const MetricVerdict& mv : cv.metrics) {
      if (mv.verdict == Verdict::kFail) {
        s.first_failure_metric = mv.metric;
        break;
      }
    }
    const CheckResult& check = run.checks[i];
    const CheckIdentity& id = check.identity;
    std::string why = cv.message;
    for (const MetricVerdict& mv : cv.metrics) {
      if (mv.verdict != Verdict::kFail || !mv.threshold) continue;
      // The statistic the gate used, named, and a position only beside its own value: the
      // failing positions are listed apart (never "position 4: <the value of position 6>").
      why = fmt::format("{} {}, needs {}", metric_name(mv.metric),
                        statistic_text(mv, value_at(check, mv.metric, mv.worst_row),
                                       place_of(check, mv.worst_row)),
                        threshold_text(mv.metric, *mv.threshold));
      break;
    }
    const std::string failing = failing_positions(check, cv);
    s.message = fmt::format(
        "{} of {} checks failed; first failure: {}{}: {}{}", s.failed, s.checks, id.id(),
        id.layer ? fmt::format(" (layer {})", *id.layer) : std::string(), why,
        failing.empty() ? std::string()
                        : (check.row_axis == "seed" ? "; failing rows: " : "; failing positions: ") + failing);
  } else {
    s.verdict = Verdict::kPass;
    s.message = fmt::format("all {} checks passed ({} rows, {} degenerate{}){}", s.checks, s.rows,
                            s.degenerate_rows,
                            s.unstable_rows ? fmt::format(", {} unstable", s.unstable_rows)
                                            : std::string(),
                            excluded.empty() ? std::string() : "; " + excluded);
  }
  if (!run.reference_only.empty()) {
    std::string names;
    for (size_t i = 0; i < run.reference_only.size(); ++i) {
      names += (i ? ", " : "") + run.reference_only[i];
    }
    if (strict) {
      const std::string why =
          fmt::format("--strict: reference tensors without a candidate: {}", names);
      if (s.verdict == Verdict::kPass) {
        s.verdict = Verdict::kFail;
        s.message = why;
      } else {
        s.message += "; " + why;
      }
    } else {
      // A partial candidate (one layer captured on a device) is valid evidence for what it
      // holds; the verdict line still says what it did not cover.
      s.message += fmt::format("; {} reference tensor{} without a candidate, not checked "
                               "(--strict fails them): {}",
                               run.reference_only.size(),
                               run.reference_only.size() == 1 ? "" : "s", names);
    }
  }
  return ev;
}

}  // namespace sg
