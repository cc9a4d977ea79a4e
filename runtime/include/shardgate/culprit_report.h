// Reports of the culprit op search (`golden-validator culprits`): JSON (schema
// reports/schema/culprits.schema.json), terminal table, Markdown and JUnit.
#pragma once

#include "shardgate/culprits.h"
#include "shardgate/report_envelope.h"

#include <string>
#include <vector>

namespace sg {

// "shardgate/culprits@2". 2: the shared envelope (report_envelope.h): verdict "diagnosis",
// exit 0; candidate and baseline shards under provenance.
inline constexpr int kCulpritReportVersion = 2;

struct CulpritReport {
  std::string tool_version;
  std::vector<std::string> command_line;
  std::string inputs;  // where the inputs came from, in words
  std::vector<CulpritResult> shards;
  size_t top = 10;  // Markdown (and the terminal table): how many error-adding ops to list
  // Op outputs below the threshold and source ops, over all shards. A diagnosis, not a gate:
  // intermediate outputs of a 4-bit MoE fall below 0.97 while the layer's output passes.
  int64_t failing_ops() const;
  int64_t source_ops() const;
};

ReportEnvelope culprit_report_envelope(const CulpritReport& report);
std::string culprit_report_json(const CulpritReport& report);
// Source ops, the ops adding the most error (`top`), and with `all` every aligned op.
std::string culprit_report_table(const CulpritReport& report, size_t top, bool all);
std::string culprit_report_markdown(const CulpritReport& report, size_t top);
// The same as an HTML fragment (heading and one table per shard), for the golden HTML report.
std::string culprit_report_html(const CulpritReport& report, size_t top);
// One <testcase> per aligned op; a failing output is a <failure>, a source op says so.
std::string culprit_report_junit(const CulpritReport& report);

}  // namespace sg
