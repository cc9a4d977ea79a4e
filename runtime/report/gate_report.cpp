// parse_gate_report_json: one parse, then the reader of the kind the envelope names.
#include "shardgate/gate_report.h"

#include "core/json.h"
#include "report/envelope_json.h"
#include "report/golden_report_read.h"
#include "report/residency_report_read.h"

namespace sg {

Result<GateReport> parse_gate_report_json(std::string_view json_text, const std::string& path) {
  SG_ASSIGN_OR_RETURN(json_util::Json root, json_util::parse(json_text, path));
  SG_ASSIGN_OR_RETURN(ReportEnvelope e, read_envelope(root, path));
  if (e.kind == kGoldenReportKind) {
    SG_ASSIGN_OR_RETURN(GoldenReport r, golden_report_from_json(root, path));
    return GateReport(std::move(r));
  }
  SG_CHECK(e.kind == kResidencyReportKind, ErrorCode::kUsage,
           "{} is a {} report of {} {}, not a gate report (golden-validator run "
           "--teacher-forced or ane-validator)",
           path, e.kind, e.tool, e.command);
  SG_ASSIGN_OR_RETURN(ResidencyReport r, residency_report_from_json(root, path));
  return GateReport(std::move(r));
}

}  // namespace sg
