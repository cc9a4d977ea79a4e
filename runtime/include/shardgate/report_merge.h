// Merging the JSON reports of the jobs of one CI fan-out (README "Fan-out across CI jobs") into
// the report a single job would have written: `golden-validator merge`. The merged report goes
// through the same writers as a single run, so its JSON, JUnit, Markdown (and HTML) equal that
// run's except for what is inherently per process: the command line, the run id, and for
// golden reports the peak-memory note (kept per slice job).
//
// Refused (kUsage, naming the files): slices of different runs (another chain, golden dump,
// gate, options, tool version or shard list), two reports of one slice or of one group/shard
// (overlap), a slice missing, and reports that are not slices (free-running golden reports).
#pragma once

#include "shardgate/golden_report.h"
#include "shardgate/residency_report.h"
#include "shardgate/status.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

// Which tool wrote a JSON report (its envelope's tool.name): "golden-validator" or
// "ane-validator"; kFormat naming `path` for anything else.
Result<std::string> report_tool_name(std::string_view json_text, const std::string& path);

// (file the report was read from, the report), in any order.
template <typename Report>
using SliceReports = std::vector<std::pair<std::string, Report>>;

// golden-validator run --teacher-forced slices (FidelityRun::slice). The result's
// command_line is empty: the caller records its own.
Result<GoldenReport> merge_golden_reports(const SliceReports<GoldenReport>& slices);

// ane-validator --shard-index/--shard-count slices: shards ordered by path as ane-validator
// orders its expanded shard list.
Result<ResidencyReport> merge_residency_reports(const SliceReports<ResidencyReport>& slices);

}  // namespace sg
