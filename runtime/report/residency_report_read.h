// Reading an ane-validator report from a document already parsed (merge parses each file once,
// reads the envelope's kind, then the report, from the same document).
// parse_residency_report_json() is this after json_util::parse().
#pragma once

#include "shardgate/residency_report.h"

#include "core/json.h"

namespace sg {

Result<ResidencyReport> residency_report_from_json(const json_util::Json& root, const std::string& path);

}  // namespace sg
