// A gate report of either tool, read from one JSON file whose envelope says which: what
// `golden-validator merge` takes (the slices of one fan-out of run --teacher-forced or of
// ane-validator). The document is parsed once; the envelope's kind picks the reader.
#pragma once

#include "shardgate/golden_report.h"
#include "shardgate/residency_report.h"
#include "shardgate/status.h"

#include <string>
#include <string_view>
#include <variant>

namespace sg {

using GateReport = std::variant<GoldenReport, ResidencyReport>;

// kUsage when the file is a report of another kind (probe, diff, advice...), naming its kind,
// tool and command; kFormat for a malformed report, as the readers of each kind say it.
Result<GateReport> parse_gate_report_json(std::string_view json_text, const std::string& path);

}  // namespace sg
