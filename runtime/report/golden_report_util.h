// Private helpers shared by the human-readable golden report renderers (table, Markdown,
// JUnit, HTML): number formatting, escaping and the per-check summary values they all show.
#pragma once

#include "report/escape.h"

#include "shardgate/golden_report.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace sg::report_util {

using sg::md_code;
using sg::md_escape;
using sg::xml_escape;

// "0.97312", "inf", "nan", "-" for absent.
std::string fmt_num(std::optional<double> v, int digits = 5);

// fmt_num for a value of metric `mv` of a check (its statistic or one of its rows): more digits
// when `digits` would round it onto the other side of its threshold (gated_value_text).
std::string fmt_gated(const MetricVerdict* mv, std::optional<double> v, int digits = 5);

// The gated statistic of one metric of a check (nullptr when not measured).
const MetricVerdict* find_metric(const CheckVerdict& v, Metric m);

// Check indices in layer order: layered checks by layer (embed = -1 first), then the others
// in report order.
std::vector<size_t> layer_order(const FidelityRun& run);

// The cosine statistic the gate used for check `i` (min, or pN): what every renderer shows, so
// the table, trend, chart and summary never disagree (absent when not measured).
std::optional<double> gated_cosine(const GoldenReport& report, size_t i);
// The name of that statistic for a column header: "min", "p10", or "statistic" when checks
// differ (then each value is labelled by cosine_value_text).
std::string cosine_statistic(const GoldenReport& report);
// The gated cosine of check `i` as text, with its statistic's name appended when the checks
// of the report do not share one ("0.96123 p10").
std::string cosine_value_text(const GoldenReport& report, size_t i, int digits = 5);

// Check indices grouped by view: checks with equal labels (e.g. mode=free-running) together,
// in first-appearance order, each group in layer order. One group when there are no labels.
std::vector<std::vector<size_t>> view_groups(const FidelityRun& run);
// "mode=teacher-forced" for a group's labels, "" without labels.
std::string labels_text(const CheckIdentity& id);

// The cosine threshold applied to a check, or the policy default, or 0.97.
double cosine_threshold(const GoldenReport& report, size_t check);


// The policy's source ("gates/fidelity.json", "built-in"), with " (adjusted on the command line)"
// when threshold options changed it (policy_note: that suffix alone, or ""): the file alone is
// not what judged the checks then.
std::string policy_text(const GatePolicy& policy);
std::string policy_note(const GatePolicy& policy);
// Whether the report re-gates a saved one (regate: an input of role "report"): its checks were
// measured, and its shards executed, by the saved run, not by this command.
bool is_regated(const GoldenReport& report);
// "run", or "regate of a saved run report": what the header says made the report.
std::string command_text(const GoldenReport& report);

// The command line as one shell-readable string (arguments with spaces or quotes are quoted).
std::string command_line_text(const std::vector<std::string>& argv);

// "L1.attn.hidden <- golden 'hidden.0'" for each input a view fed from the goldens, and how
// many read the chain's own tensors: one line per view describing its inputs.
std::string feeds_text(const ReportView& view);

// One row of check `i` that the gate excluded as `unstable` (probe's input-stability check):
// where it is, how far the FP16 baseline itself moved, and the margin to the cosine gate.
struct UnstableRow {
  size_t row = 0;          // index into CheckResult::rows
  std::string place;       // "seed 3 position 5"
  double stability_cosine = 0;
  double bound = 0;        // the check's min_cosine
  // "seed 3 position 5: unstable (the FP16 baseline moves to cosine 0.41 under a tiny input
  // perturbation, margin -0.56 to min_cosine 0.97): excluded, not quantization error"
  std::string text() const;
};
std::vector<UnstableRow> unstable_rows(const GoldenReport& report, size_t i);

// "L3" for layer 3, "-" for none.
std::string layer_text(const CheckIdentity& id);

// The verdict word of headers and summary lines: "PASS", "FAIL" or "EMPTY SLICE".
std::string verdict_word(const GoldenReport& report);
// "slice 1 of 5 (CI fan-out): teacher-forced step groups 1 of 6 (steps L0.attn, ...)", or ""
// for a report that is not one slice of several.
std::string slice_text(const GoldenReport& report);

// The JUnit suite and class name of a report: "golden-validator.<command>.<subject>", the
// subject being what the run judged, so two chains (or dumps) in one pipeline never share a
// test id: the chain manifest's file stem (run, and regate/merge of a run), else the candidate
// dump's directory name (compare), else the first shard's file stem (probe).
std::string junit_suite(const GoldenReport& report);

}  // namespace sg::report_util
