// What a result was computed from: input files with their sha256 and shards with their
// fingerprints. Plain data, kept at the bottom of the library so every layer that records
// provenance (golden runs, precision advice) can without reaching up to the reports, which
// write it as the envelope's "provenance" (report_envelope.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sg {

// An input file a report was computed from.
struct ReportInput {
  std::string role;    // "candidate", "reference", "gate", "chain", "shard", "plan", "slice", ...
  std::string path;
  std::string sha256;  // of the file (for a dump directory: of its manifest.json); "" unknown
};

// A shard a command judged: which exact build. The fingerprint is Shard::fingerprint() (sha256
// over the program file and every weight file; runtime/format/README.md), so two builds that
// differ in any weight byte never share it.
struct ReportShard {
  std::string id;           // chain step id, the shard's role ("candidate", "baseline"), or ""
  std::string path;         // as given (chain manifests: resolved against the manifest)
  std::string fingerprint;  // lower-case hex; "" when not computed (--no-fingerprint)
};

struct ReportProvenance {
  std::optional<ReportInput> gate;  // the gate file applied; nullopt: built-in defaults / none
  std::vector<ReportInput> inputs;
  std::vector<ReportShard> shards;
};

}  // namespace sg
