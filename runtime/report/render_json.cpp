// The JSON form of every report kind (render_json, report_formats.h): the versioned contract,
// each kind with its schema in reports/schema/ and the shared envelope.
#include "shardgate/advice_report.h"
#include "shardgate/culprit_report.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_diff.h"
#include "shardgate/report_formats.h"
#include "shardgate/residency_report.h"
#include "shardgate/weight_report.h"

namespace sg {

std::optional<std::string> render_json(const GoldenReport& r) { return golden_report_json(r); }
std::optional<std::string> render_json(const ResidencyReport& r) { return residency_report_json(r); }
std::optional<std::string> render_json(const WeightReport& r) { return weight_report_json(r); }
std::optional<std::string> render_json(const CulpritReport& r) { return culprit_report_json(r); }
std::optional<std::string> render_json(const AdviceResult& r) { return advice_report_json(r); }
std::optional<std::string> render_json(const DiffReport& r) {
  return report_diff_json(r.diff, r.policy, r.command_line, r.tool_version);
}

}  // namespace sg
