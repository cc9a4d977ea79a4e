// The Markdown form of every report kind (render_markdown, report_formats.h): the summary a CI
// job summary or a pull-request comment shows.
#include "shardgate/advice_report.h"
#include "shardgate/culprit_report.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_diff.h"
#include "shardgate/report_formats.h"
#include "shardgate/residency_report.h"
#include "shardgate/weight_report.h"

namespace sg {

std::optional<std::string> render_markdown(const GoldenReport& r) { return golden_report_markdown(r); }
std::optional<std::string> render_markdown(const ResidencyReport& r) { return residency_report_markdown(r); }
std::optional<std::string> render_markdown(const WeightReport& r) { return weight_report_markdown(r); }
std::optional<std::string> render_markdown(const CulpritReport& r) { return culprit_report_markdown(r, r.top); }
std::optional<std::string> render_markdown(const AdviceResult& r) { return advice_report_markdown(r); }
std::optional<std::string> render_markdown(const DiffReport& r) { return report_diff_markdown(r.diff); }

}  // namespace sg
