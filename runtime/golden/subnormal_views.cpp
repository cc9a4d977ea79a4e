// join_subnormal_views (fidelity.h): the two storage views of --subnormals both in one run.
#include "shardgate/fidelity.h"

#include <algorithm>

namespace sg {

FidelityRun join_subnormal_views(FidelityRun keep, FidelityRun flush) {
  FidelityRun out = std::move(keep);
  for (CheckResult& c : out.checks) c.identity.labels.emplace_back("subnormals", "keep");
  for (CheckResult& c : flush.checks) {
    c.identity.labels.emplace_back("subnormals", "flush");
    out.checks.push_back(std::move(c));
  }
  for (ReportInput& in : flush.inputs) {
    bool seen = false;
    for (const ReportInput& have : out.inputs) seen = seen || (have.role == in.role && have.path == in.path);
    if (!seen) out.inputs.push_back(std::move(in));
  }
  for (ReportShard& sh : flush.shards) {
    bool seen = false;
    for (const ReportShard& have : out.shards) seen = seen || (have.id == sh.id && have.fingerprint == sh.fingerprint);
    if (!seen) out.shards.push_back(std::move(sh));
  }
  for (const std::string& r : flush.reference_only) {
    if (std::find(out.reference_only.begin(), out.reference_only.end(), r) == out.reference_only.end()) {
      out.reference_only.push_back(r);
    }
  }
  for (const std::string& c : flush.candidate_only) {
    if (std::find(out.candidate_only.begin(), out.candidate_only.end(), c) == out.candidate_only.end()) {
      out.candidate_only.push_back(c);
    }
  }
  for (std::string& n : flush.notes) out.notes.push_back("[subnormals flush] " + n);
  out.notes.push_back(
      "subnormals both: every check ran twice, with fp16 subnormal results (|x| < 2^-14) kept "
      "(subnormals=keep) and flushed to zero (subnormals=flush); whether the ANE flushes them is "
      "not known here, so a build should pass both");
  return out;
}

}  // namespace sg
