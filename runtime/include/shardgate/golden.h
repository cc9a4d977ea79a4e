// Golden dumps: reference (or candidate) tensors with the metadata that says how to compare them.
//
// Two containers (goldens/README.md documents both):
//  - a directory with `manifest.json` (schema "shardgate/golden-dump@1") and one .npy per
//    tensor; every entry carries name, kind, layer, position_axis, shape, dtype, file, sha256;
//  - a `.safetensors` file. Its optional `__metadata__` key "shardgate" holds a JSON object
//    {"<tensor name>": {"kind": ..., "layer": ..., "position_axis": ...}}; without it the kind
//    and layer are inferred from the name ("embed" → hidden/-1, "hidden.N" → hidden/N,
//    "logits" → logits, "input_ids" → input, else "output") and the position axis is unknown:
//    such a tensor is refused as a reference unless the position axis is given
//    (GoldenOpenOptions; a pooled [1, 384] output must not become 384 one-element positions).
// Tensors are memory-mapped; a dump is opened once and tensors are loaded one at a time.
#pragma once

#include "shardgate/dtype.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

inline constexpr std::string_view kGoldenDumpSchema = "shardgate/golden-dump@1";

struct GoldenEntry {
  std::string name;                     // unique within the dump, e.g. "hidden.0"
  std::string kind;                     // "input", "hidden", "logits", "output", "state", ...
  std::optional<int64_t> layer;         // -1 for "embed"; absent for inputs / logits
  std::optional<int64_t> position_axis; // non-negative, < rank; absent: no position axis
  // A .safetensors tensor without position metadata: its axes are unknown, so it is refused as
  // a reference (compare, run) unless the position axis is given (GoldenOpenOptions).
  bool position_axis_missing = false;
  Shape shape;
  DType dtype = DType::kInvalid;        // manifest spelling: "fp16", "fp32", "int32", ...
  std::string file;                     // relative to the dump directory (dumps only)
  std::string sha256;                   // lower-case hex of the file bytes (dumps only)
};

// What made a dump (`record` writes it; hand-written dumps may omit it): the tool, its command
// line, the chain manifest with its sha256, the storage precision, and every shard executed with
// its Shard::fingerprint() (sha256 over the program and every weight file), so a dump names the
// exact baseline build it came from.
struct GoldenProvenance {
  struct Shard {
    std::string id;           // chain step id
    std::string path;         // as resolved from the chain manifest
    std::string fingerprint;  // lower-case hex
  };
  std::string tool;                       // "golden-validator 0.1.0"
  std::vector<std::string> command_line;  // argv, unquoted
  std::string chain;                      // chain manifest path
  std::string chain_sha256;
  std::string precision;                  // "fp16", "fp16-ftz", "fp32"
  std::vector<Shard> shards;
};

struct GoldenManifest {
  std::string schema = std::string(kGoldenDumpSchema);
  std::string model;
  std::string dtype;                          // dominant float dtype, "fp16" or "fp32"
  std::vector<int64_t> prompt_token_ids;
  std::vector<GoldenEntry> tensors;
  std::optional<GoldenProvenance> provenance;
};

// Parses and validates manifest.json text: schema string, unique names, known dtypes,
// non-negative dims, position_axis inside the rank, file names relative without "..",
// sha256 as 64 hex digits. Messages name `path` and the JSON place ("tensors[2].shape").
Result<GoldenManifest> parse_golden_manifest(std::string_view json_text, const std::string& path);
// Serialises a manifest (stable key order, two-space indent, trailing newline).
std::string golden_manifest_json(const GoldenManifest& manifest);

// A readable set of named tensors with metadata: a dump directory or a .safetensors file.
class GoldenSource {
 public:
  virtual ~GoldenSource() = default;
  // The path given to open (directory or file).
  virtual const std::string& path() const = 0;
  // The file whose sha256 identifies the source in reports (manifest.json or the .safetensors).
  virtual std::string identity_file() const = 0;
  virtual const std::vector<GoldenEntry>& entries() const = 0;
  // Loads one tensor; checks that shape and dtype agree with the entry (and, for dumps, that
  // the file's sha256 matches the manifest). kIO / kFormat / kShape errors name the file.
  virtual Result<Tensor> load(const std::string& name) const = 0;
  // Verifies every entry (exists, sha256, shape and dtype): what `record` promises.
  Status verify_all() const;

  const GoldenEntry* find(std::string_view name) const;
};

// How to read .safetensors tensors that carry no position metadata (`--position-axis N|none`):
// when given, N (or none: the whole tensor is one row) applies to every such tensor.
struct GoldenOpenOptions {
  bool position_axis_given = false;
  std::optional<int64_t> position_axis;
};

// The kUsage error for a reference entry whose position axis is unknown, or ok.
Status require_position_axis(const GoldenSource& source, const GoldenEntry& entry);

// Opens a dump directory (validates manifest.json; files are checked when loaded).
Result<std::unique_ptr<GoldenSource>> open_golden_dump(const std::string& dir);
// Opens a .safetensors file (header validated up front).
Result<std::unique_ptr<GoldenSource>> open_safetensors(const std::string& path,
                                                       const GoldenOpenOptions& options = {});
// Directory → dump; a file ending in ".safetensors" → safetensors; anything else: kUsage.
Result<std::unique_ptr<GoldenSource>> open_golden_source(const std::string& path,
                                                         const GoldenOpenOptions& options = {});

// Parses safetensors bytes held in memory (the mapping of open_safetensors; tests). Tensors
// are views into `bytes` kept alive by `keepalive` (copied when their offset is misaligned).
struct SafetensorsTensor {
  std::string name;
  Tensor tensor;
};
struct SafetensorsContents {
  std::vector<SafetensorsTensor> tensors;     // in header order
  std::string metadata_shardgate;             // raw "__metadata__"."shardgate" value, or ""
};
Result<SafetensorsContents> parse_safetensors(std::span<const std::byte> bytes,
                                              std::shared_ptr<const void> keepalive,
                                              const std::string& path);

// Writes a dump directory: each tensor as .npy (atomic), then manifest.json with the files'
// sha256. Used by `record` and by tests.
class GoldenDumpWriter {
 public:
  // Creates `dir` (and parents) when missing. Existing files of the same names are replaced.
  static Result<GoldenDumpWriter> create(const std::string& dir, std::string model,
                                         std::string dtype,
                                         std::vector<int64_t> prompt_token_ids);
  // Adds a tensor; `entry.shape`, `dtype`, `file` and `sha256` are filled from `t` (file
  // defaults to the name with '.' replaced by '_' plus ".npy"). Duplicate names are refused.
  Status add(GoldenEntry entry, const Tensor& t);
  // What made the dump, written into manifest.json (record sets it).
  void set_provenance(GoldenProvenance provenance) { manifest_.provenance = std::move(provenance); }
  // Writes manifest.json atomically.
  Status finish();
  const GoldenManifest& manifest() const { return manifest_; }

 private:
  std::string dir_;
  GoldenManifest manifest_;
};

}  // namespace sg
