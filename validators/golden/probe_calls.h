// probe's sequence mode: a stateful shard probed over several calls (--calls DIR|FILE.npz or
// --chunk, with --carry as in exec; exec_calls.h). The candidate and its baseline each run the
// calls in order with their OWN state carried (MIL state buffers and --carry outputs), as each
// build would be deployed, on the same per-call inputs; every output of every call is one check
// labelled {"call", "call_003"} (rows per position for [batch, position, ...] outputs), so a
// drift that builds up through the carried state shows as falling cosines from call to call.
// Seeds, --inputs-from and the input-stability check do not apply (one input per call).
#pragma once

#include "golden/exec_args.h"
#include "golden/exec_calls.h"
#include "shardgate/fidelity.h"
#include "shardgate/op_context.h"
#include "shardgate/status.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sg::golden_cli {

struct ProbeCallsOptions {
  std::string function = "main";
  Precision precision = Precision::kFp16;
  int threads = 1;
  bool cast = false;
  uint64_t seed = 0;  // inputs neither given nor carried: seeded random, call k with seed + k
  MetricOptions metrics;
  std::map<std::string, std::string> output_kinds;  // output -> kind ("logits" by name, else "output")
  // output -> position axis (--output-position-axis); others: axis 1 when the rank is >= 3
  std::map<std::string, std::optional<int64_t>> position_axes;
  std::vector<std::pair<std::string, std::string>> labels;  // added to every check (e.g. shard)
};

struct ProbeCallsResult {
  std::vector<CheckResult> checks;
  std::vector<std::string> notes;
  std::vector<ReportShard> shards;  // baseline and candidate with their fingerprints
  std::vector<ReportInput> inputs;  // the two shards' program files with their sha256
};

Result<ProbeCallsResult> probe_calls(const std::string& candidate, const std::string& baseline,
                                     const SequenceArgs& sequence,
                                     const std::map<std::string, GivenInput>& given,
                                     const ProbeCallsOptions& options);

}  // namespace sg::golden_cli
