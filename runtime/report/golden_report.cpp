// Golden reports (golden_report.h): gating a run into a report, regating, exit codes and
// atomic report files.
#include "shardgate/golden_report.h"

#include "shardgate/io.h"

#include <algorithm>
#include <optional>
#include <tuple>

namespace sg {

namespace {

std::string mode_of(const CheckIdentity& id) {
  for (const auto& [k, v] : id.labels) {
    if (k == "mode") return v;
  }
  return "";
}

std::optional<double> cosine_of(const CheckVerdict& v) {
  for (const MetricVerdict& mv : v.metrics) {
    if (mv.metric == Metric::kCosine) return mv.value;
  }
  return std::nullopt;
}

std::string cosine_text(const CheckVerdict& v) {
  for (const MetricVerdict& mv : v.metrics) {
    if (mv.metric == Metric::kCosine && mv.value) {
      return fmt::format("cosine {} {:.6f}", mv.statistic, *mv.value);
    }
  }
  return verdict_name(v.verdict);
}

}  // namespace

std::string views_finding(const FidelityRun& run, const GateEvaluation& evaluation) {
  bool has_fr = false, has_tf = false;
  for (const ReportView& v : run.views) {
    has_fr = has_fr || v.mode == "free-running";
    has_tf = has_tf || v.mode == "teacher-forced";
  }
  if (!has_fr || !has_tf) return "";
  // Pairs (free-running, teacher-forced) of the same checkpoint, in layer order.
  struct Pair {
    size_t fr, tf;
  };
  std::vector<Pair> pairs;
  for (size_t i = 0; i < run.checks.size(); ++i) {
    if (mode_of(run.checks[i].identity) != "free-running") continue;
    for (size_t k = 0; k < run.checks.size(); ++k) {
      if (mode_of(run.checks[k].identity) == "teacher-forced" &&
          run.checks[k].identity.checkpoint == run.checks[i].identity.checkpoint) {
        pairs.push_back({i, k});
      }
    }
  }
  auto key = [&](const Pair& p) {
    const auto& l = run.checks[p.fr].identity.layer;
    return std::make_tuple(l ? 0 : 1, l.value_or(0), p.fr);
  };
  std::sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) { return key(a) < key(b); });
  auto passes = [&](size_t i) { return evaluation.checks[i].verdict == Verdict::kPass; };

  for (const Pair& p : pairs) {
    if (!passes(p.tf)) {
      const CheckIdentity& id = run.checks[p.tf].identity;
      return fmt::format("a shard fails on its own: {}{} fails teacher-forced ({}), given golden "
                         "inputs",
                         id.checkpoint, id.layer ? fmt::format(" (layer {})", *id.layer) : "",
                         cosine_text(evaluation.checks[p.tf]));
    }
  }
  const Pair* first = nullptr;
  for (const Pair& p : pairs) {
    if (!passes(p.fr)) {
      first = &p;
      break;
    }
  }
  if (!first) return "views agree: every checkpoint passes free-running and teacher-forced";
  // Where the drift takes over: the first layer whose free-running error is more than twice
  // its own.
  std::optional<int64_t> from;
  double fr_err = 0, tf_err = 0;
  for (const Pair& p : pairs) {
    const auto& layer = run.checks[p.fr].identity.layer;
    if (!layer) continue;
    const auto a = cosine_of(evaluation.checks[p.fr]);
    const auto b = cosine_of(evaluation.checks[p.tf]);
    if (a && b && (1 - *a) > 2 * (1 - *b)) {
      from = *layer;
      fr_err = 1 - *a;
      tf_err = 1 - *b;
      break;
    }
    if (&p == first) break;
  }
  const CheckIdentity& id = run.checks[first->fr].identity;
  std::string where;
  if (from) {
    where = fmt::format("layer {}", *from);
  } else if (id.layer) {
    where = fmt::format("layer {}", *id.layer);
  } else {
    where = "the last layer";
  }
  std::string out = fmt::format(
      "views disagree: accumulated drift from {}: {} fails free-running ({}) but passes "
      "teacher-forced ({}); no shard fails on its own",
      where, id.checkpoint, cosine_text(evaluation.checks[first->fr]),
      cosine_text(evaluation.checks[first->tf]));
  if (from) {
    out += fmt::format("; from layer {} the free-running error (1 - cosine = {:.5f}) is more than "
                       "twice the layer's own ({:.5f})",
                       *from, fr_err, tf_err);
  }
  return out;
}

namespace {

// Checks whose rows hold one element each have a cosine only where the signs differ
// (compare_tensors): say so once per check, so a report showing "-" for them explains it (a
// re-read report keeps its notes).
void note_rows_without_cosine(FidelityRun& run) {
  for (const CheckResult& c : run.checks) {
    bool measured = false;
    for (const RowResult& r : c.rows) measured = measured || r.value(Metric::kNormRatio).has_value();
    // Elements per row from the shape (a probe check's shape leads with its seeds, and its
    // rows are per seed), not from the cosines, which a sign flip now sets.
    if (!measured || numel(c.shape) != static_cast<int64_t>(c.rows.size())) continue;
    const std::string note = fmt::format(
        "{}: every row holds one element, whose cosine is only the sign (±1): it is measured "
        "only where the signs differ (-1, which fails); the norm ratio and the errors judge "
        "the rest", c.identity.id());
    if (std::find(run.notes.begin(), run.notes.end(), note) == run.notes.end()) run.notes.push_back(note);
  }
}

}  // namespace

Result<GoldenReport> make_golden_report(FidelityRun run, GatePolicy policy, bool strict,
                                        std::string tool_version) {
  note_rows_without_cosine(run);
  GoldenReport report;
  report.tool_version = std::move(tool_version);
  SG_ASSIGN_OR_RETURN(report.evaluation, evaluate_gate(run, policy, strict));
  // Say what the verdict answers: a teacher-forced pass is not a pass of the chain.
  if (run.views.size() == 1 && run.views[0].mode == "teacher-forced") {
    report.evaluation.summary.message =
        std::string(kTeacherForcedScope) + ": " + report.evaluation.summary.message;
  }
  if (run.slice && run.slice->empty()) report.evaluation.summary.message = run.slice->empty_note();
  report.views_finding = views_finding(run, report.evaluation);
  if (!report.views_finding.empty()) {
    const std::string& f = report.views_finding;
    report.evaluation.summary.message += "; " + f.substr(0, f.find(':', f.find(':') + 1));
  }
  report.run = std::move(run);
  report.policy = std::move(policy);
  report.strict = strict;
  return report;
}

Result<GoldenReport> regate_report(const GoldenReport& report, GatePolicy policy, bool strict) {
  return make_golden_report(report.run, std::move(policy), strict, report.tool_version);
}

GoldenReport golden_error_report(const std::string& command, const Status& status,
                                 std::string tool_version) {
  GoldenReport report;
  report.tool_version = std::move(tool_version);
  report.run.command = command;
  report.policy = builtin_gate_policy();
  report.evaluation.summary.verdict = Verdict::kNoEvidence;
  report.evaluation.summary.message = fmt::format("{}: {}", error_code_name(status.code()), status.message());
  report.error = GoldenReport::Error{error_code_name(status.code()), status.message(),
                                     exit_code(status.code())};
  return report;
}

bool is_empty_slice(const GoldenReport& report) {
  return !report.error && report.run.slice && report.run.slice->empty();
}

std::string report_verdict_name(const GoldenReport& report) {
  if (report.error) return "error";
  if (is_empty_slice(report)) return "empty-slice";
  return verdict_name(report.evaluation.summary.verdict);
}

int report_exit_code(const GoldenReport& report) {
  if (report.error) return report.error->exit_code;
  if (is_empty_slice(report)) return kExitPass;
  return report.evaluation.summary.verdict == Verdict::kPass ? kExitPass : kExitGateFailed;
}

ReportEnvelope golden_report_envelope(const GoldenReport& report) {
  ReportEnvelope e = make_report_envelope(kGoldenReportKind, kGoldenReportVersion, "golden-validator",
                                          report.tool_version, report.run.command, report.command_line);
  e.verdict = report_verdict_name(report);
  e.exit_code = report_exit_code(report);
  if (!report.policy.sha256.empty()) {
    e.provenance.gate = ReportInput{"gate", report.policy.source, report.policy.sha256};
  }
  e.provenance.inputs = report.run.inputs;
  e.provenance.shards = report.run.shards;
  return e;
}

Status write_report_file(const std::string& path, std::string_view contents) {
  Status s = write_file_atomic(path, contents);
  if (!s.is_ok()) return std::move(s).with_context("writing report " + path);
  return s;
}

}  // namespace sg
