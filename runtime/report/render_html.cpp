// The HTML page (render_html, report_formats.h): golden reports only, whose per-layer and
// per-position values make the heat map and charts; the other kinds have no HTML form.
#include "shardgate/advice_report.h"
#include "shardgate/culprit_report.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_diff.h"
#include "shardgate/report_formats.h"
#include "shardgate/residency_report.h"
#include "shardgate/weight_report.h"

namespace sg {

std::optional<std::string> render_html(const GoldenReport& r) { return golden_report_html(r); }
std::optional<std::string> render_html(const ResidencyReport&) { return std::nullopt; }
std::optional<std::string> render_html(const WeightReport&) { return std::nullopt; }
std::optional<std::string> render_html(const CulpritReport&) { return std::nullopt; }
std::optional<std::string> render_html(const AdviceResult&) { return std::nullopt; }
std::optional<std::string> render_html(const DiffReport&) { return std::nullopt; }

}  // namespace sg
