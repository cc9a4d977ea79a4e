// The table of report formats (report_formats.def) and the one way any report of either tool
// is rendered in one of them: render_report(report, format).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sg {

// Every kind of report the tools write (the schema kinds of report_envelope.h).
struct GoldenReport;     // golden-report: run, compare, probe, regate, merge
struct ResidencyReport;  // ane-report: ane-validator, merge of its slices
struct WeightReport;     // weight-diagnostics: weights
struct CulpritReport;    // culprits
struct AdviceResult;     // advice: advise
struct DiffReport;       // report-diff: diff

enum class ReportFormat : uint8_t {
#define SG_REPORT_FORMAT(enumerator, id, option, help) enumerator,
#include "shardgate/report_formats.def"
#undef SG_REPORT_FORMAT
};

struct ReportFormatInfo {
  ReportFormat format;
  std::string_view name;    // "json": what write_reports records
  std::string_view option;  // "--json"
  std::string_view help;
};

inline constexpr ReportFormatInfo kReportFormats[] = {
#define SG_REPORT_FORMAT(enumerator, id, option, help) {ReportFormat::enumerator, #id, option, help},
#include "shardgate/report_formats.def"
#undef SG_REPORT_FORMAT
};
inline constexpr size_t kReportFormatCount = std::size(kReportFormats);

// render_<id>(report) for every format and report kind: the text, or std::nullopt when the
// format has no form of that kind (ane-validator reports have no HTML page).
#define SG_REPORT_FORMAT(enumerator, id, option, help)           \
  std::optional<std::string> render_##id(const GoldenReport&);    \
  std::optional<std::string> render_##id(const ResidencyReport&); \
  std::optional<std::string> render_##id(const WeightReport&);    \
  std::optional<std::string> render_##id(const CulpritReport&);   \
  std::optional<std::string> render_##id(const AdviceResult&);    \
  std::optional<std::string> render_##id(const DiffReport&);
#include "shardgate/report_formats.def"
#undef SG_REPORT_FORMAT

template <typename Report>
std::optional<std::string> render_report(const Report& report, ReportFormat format) {
  switch (format) {
#define SG_REPORT_FORMAT(enumerator, id, option, help) \
  case ReportFormat::enumerator:                        \
    return render_##id(report);
#include "shardgate/report_formats.def"
#undef SG_REPORT_FORMAT
  }
  return std::nullopt;
}

}  // namespace sg
