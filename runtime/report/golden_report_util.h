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

using sg::md_escape;
using sg::xml_escape;

// "0.97312", "inf", "nan", "-" for absent.
std::string fmt_num(std::optional<double> v, int digits = 5);

// The gated statistic of one metric of a check (nullptr when not measured).
const MetricVerdict* find_metric(const CheckVerdict& v, Metric m);

// Check indices in layer order: layered checks by layer (embed = -1 first), then the others
// in report order.
std::vector<size_t> layer_order(const FidelityRun& run);

// Minimum cosine over the gated rows of a check (absent when none).
std::optional<double> min_cosine(const CheckResult& c);

// The cosine threshold applied to a check, or the policy default, or 0.97.
double cosine_threshold(const GoldenReport& report, size_t check);


// The command line as one shell-readable string (arguments with spaces or quotes are quoted).
std::string command_line_text(const std::vector<std::string>& argv);

// "L3" for layer 3, "-" for none.
std::string layer_text(const CheckIdentity& id);

}  // namespace sg::report_util
