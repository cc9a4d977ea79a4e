// Reading a golden report from a document already parsed (diff parses each file once and reads
// the envelope, then the report, from the same document). parse_golden_report_json() is this
// after json_util::parse().
#pragma once

#include "shardgate/golden_report.h"

#include "core/json.h"

namespace sg {

Result<GoldenReport> golden_report_from_json(const json_util::Json& root, const std::string& path);

}  // namespace sg
