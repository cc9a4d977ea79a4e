// Writing the reports of one run (both CLIs). Every report carries the same run id, so a
// consumer can tell a set mixed from two runs (after a kill, say); the JSON report is written
// last, so a JSON report with a run id vouches for every other report of that id.
#pragma once

#include "shardgate/status.h"

#include <string>
#include <string_view>
#include <vector>

namespace sg {

struct ReportOutput {
  std::string path;      // "-" is standard output (write_file_atomic)
  std::string format;    // "json", "junit", "markdown" or "html"
  std::string contents;  // as rendered, without the run id
};

// The run id: the first 16 hex digits of the sha256 of the JSON report as rendered (of all
// reports when there is no JSON one). Identical runs get identical ids, so reports stay
// byte-for-byte reproducible; runs that differ in anything reported get different ids.
std::string report_run_id(const std::vector<ReportOutput>& outputs);

// `contents` with the run id added in the format's own way: a top-level "run_id" key (JSON),
// a comment after the XML declaration (JUnit) or the doctype (HTML), a first-line comment
// (Markdown).
std::string stamp_run_id(std::string_view contents, std::string_view format,
                         std::string_view run_id);

// Stamps every output with the run id and writes them with write_file_atomic, the JSON one
// last. Stops at the first error (which names the file).
Status write_reports(const std::vector<ReportOutput>& outputs);

}  // namespace sg
