// write_reports (report_output.h): one run id in every report, the JSON renamed last.
#include "shardgate/report_output.h"

#include "shardgate/io.h"
#include "shardgate/run_inputs.h"

#include <algorithm>

namespace sg {

std::string report_run_id(const std::vector<ReportOutput>& outputs) {
  std::string basis;
  for (const ReportOutput& o : outputs) {
    if (o.format == "json") {
      basis = o.contents;
      break;
    }
  }
  if (basis.empty()) {
    for (const ReportOutput& o : outputs) basis += o.format + "\n" + o.contents;
  }
  return sha256_hex(std::as_bytes(std::span<const char>(basis.data(), basis.size()))).substr(0, 16);
}

std::string stamp_run_id(std::string_view contents, std::string_view format,
                         std::string_view run_id) {
  std::string out(contents);
  const std::string comment = "<!-- shardgate run_id: " + std::string(run_id) + " -->\n";
  if (format == "json") {
    const size_t brace = out.find('{');
    if (brace != std::string::npos) {
      out.insert(brace + 1, "\n  \"run_id\": \"" + std::string(run_id) + "\",");
    }
  } else if (format == "junit" || format == "html") {
    // After the first line (the XML declaration / the doctype).
    const size_t eol = out.find('\n');
    out.insert(eol == std::string::npos ? out.size() : eol + 1, comment);
  } else {
    out.insert(0, comment);
  }
  return out;
}

Status write_reports(const std::vector<ReportOutput>& outputs) {
  const std::string id = report_run_id(outputs);
  std::vector<const ReportOutput*> order;
  for (const ReportOutput& o : outputs) {
    // A target already refused as an input of this run: that refusal ended the run and was
    // reported, and its error report is not written anywhere (all or none, below). Checked
    // again, it printed a second usage error for the one cause.
    if (run_inputs::refused(o.path)) return Status::ok();
    order.push_back(&o);
  }
  std::stable_partition(order.begin(), order.end(),
                        [](const ReportOutput* o) { return o->format != "json"; });
  // All or none: a target that is an input of the run refuses the whole set before any
  // report is written (run_inputs.h; write_file_atomic checks again).
  for (const ReportOutput* o : order) SG_TRY(run_inputs::check_output(o->path));
  for (const ReportOutput* o : order) {
    Status s = write_file_atomic(o->path, stamp_run_id(o->contents, o->format, id));
    if (!s.is_ok()) return std::move(s).with_context("writing report " + o->path);
  }
  return Status::ok();
}

}  // namespace sg
