// Saved reports read back by the tools: `golden-validator regate REPORT.json` (parse, re-gate
// under the saved policy, write every report form again) and `golden-validator diff OLD NEW`
// (golden-validator and ane-validator JSON reports). The first byte picks the reader; the rest
// is the report.
#include "fuzz_support.h"
#include "shardgate/golden_report.h"
#include "shardgate/report_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text = sg::fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto saved = sg::parse_golden_report_json(text, "report.json");
    if (!saved) return 0;
    auto report = sg::regate_report(*saved, saved->policy, saved->strict);
    if (!report) return 0;
    (void)sg::golden_report_json(*report);
    (void)sg::golden_report_table(*report);
    (void)sg::golden_report_junit(*report);
    (void)sg::golden_report_markdown(*report);
    (void)sg::golden_report_html(*report);
  } else {
    // The report diffed against itself: both sides are read by the same code, and a diff of
    // equal reports still walks every quantity.
    const std::string path = sg::fuzz::write_scratch("report.json", text);
    const sg::RegressionPolicy policy;
    auto diff = sg::diff_reports(path, path, policy);
    if (diff) {
      (void)sg::report_diff_json(*diff, policy, {}, "fuzz");
      (void)sg::report_diff_table(*diff, true);
      (void)sg::report_diff_markdown(*diff);
      (void)sg::report_diff_junit(*diff);
    }
  }
  return 0;
}
