// The two program readers and the package manifest reader. Both program readers produce the
// same Program for the same model (a test checks this on every corpus pair).
#pragma once

#include "shardgate/program.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace sg {

// model.mil text (program(1.0) and program(1.3) spellings). `filename` is used in messages,
// which give line and column: "model.mil:12:40: expected ')' after argument list".
Result<Program> parse_mil_text(std::string_view text, const std::string& filename);

// A serialized CoreML.Specification.Model whose type is mlProgram (field 502).
struct ProtoModel {
  Program program;
  ModelInfo info;
};
Result<ProtoModel> parse_model_proto(std::span<const std::byte> data, const std::string& filename);

// metadata.json of a compiled model: spec version and I/O description. A missing file
// gives an empty ModelInfo (it is optional); a malformed one is an error.
Result<ModelInfo> read_compiled_metadata(const std::string& mlmodelc_dir);

// Manifest.json of an .mlpackage: where the root model and its weights live.
struct PackageLayout {
  std::string root_model_path;  // absolute path of model.mlmodel
  std::string model_dir;        // directory "@model_path" stands for (root model's folder)
};
Result<PackageLayout> read_package_manifest(const std::string& mlpackage_dir);

}  // namespace sg
