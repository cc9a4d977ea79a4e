// The JUnit XML form of every report kind (render_junit, report_formats.h): suites named
// <tool>.<command>[.<subject>], one test case per check, shard, weight or op.
#include "shardgate/advice_report.h"
#include "shardgate/culprit_report.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_diff.h"
#include "shardgate/report_formats.h"
#include "shardgate/residency_report.h"
#include "shardgate/weight_report.h"

namespace sg {

std::optional<std::string> render_junit(const GoldenReport& r) { return golden_report_junit(r); }
std::optional<std::string> render_junit(const ResidencyReport& r) { return residency_report_junit(r); }
std::optional<std::string> render_junit(const WeightReport& r) { return weight_report_junit(r); }
std::optional<std::string> render_junit(const CulpritReport& r) { return culprit_report_junit(r); }
std::optional<std::string> render_junit(const AdviceResult& r) { return advice_report_junit(r); }
std::optional<std::string> render_junit(const DiffReport& r) { return report_diff_junit(r.diff); }

}  // namespace sg
