// Shard: one Core ML ML-program model on disk (.mlmodelc or .mlpackage), opened for reading.
//
// Opening parses the program (model.mil text or the protobuf) and reads the I/O description,
// but maps no weights: weight files are memory-mapped on first use and literals are resolved
// to read-only tensor views into the mapping, one at a time, when an op needs them.
#pragma once

#include "shardgate/program.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sg {

// Blob storage (blob.h, runtime/format/blob.cpp) is an implementation detail of reading a
// shard: callers that open blob files include blob.h themselves.
class BlobFile;

enum class ShardForm : uint8_t { kCompiled, kPackage };  // .mlmodelc, .mlpackage
const char* shard_form_name(ShardForm form);              // "mlmodelc" / "mlpackage"

// A model input, output or state as the model describes it (metadata.json for .mlmodelc,
// ModelDescription for .mlpackage). Shapes use kUnknownDim where flexible.
struct FeatureInfo {
  std::string name;
  std::string function;  // "" for single-function models
  DType dtype = DType::kInvalid;
  Shape shape;
  bool flexible = false;       // EnumeratedShapes or RangeDims
  bool range_flexible = false;  // RangeDims / shapeRange (placement rule G3)
  // For a flexible input, the shape the description declares as its default (the `shape` the
  // flexible ranges or enumerated shapes come with); empty when not declared.
  Shape default_shape;
  bool is_state = false;
};

struct ModelInfo {
  int spec_version = 0;  // 0 when unknown
  std::vector<FeatureInfo> inputs;
  std::vector<FeatureInfo> outputs;
  std::vector<FeatureInfo> states;
  std::string default_function;
};

class Shard {
 public:
  // `path` is a .mlmodelc or .mlpackage directory. Errors name the file and the place.
  static Result<std::shared_ptr<Shard>> open(const std::string& path);
  // A shard around a program built in memory (tests, generated programs). Literals are inline
  // or BLOBFILE references resolved under `model_dir` ("@model_path").
  static std::shared_ptr<Shard> from_program(Program program, ModelInfo info,
                                             std::string model_dir);

  const std::string& path() const { return path_; }
  ShardForm form() const { return form_; }
  const Program& program() const { return program_; }
  const ModelInfo& info() const { return info_; }
  // The file the program was read from (model.mil or model.mlmodel).
  const std::string& program_file() const { return program_file_; }
  // Lower-case hex sha256 of the program file's bytes (model.mil for compiled shards).
  const std::string& program_sha256() const { return program_sha256_; }
  // Directory that "@model_path" stands for.
  const std::string& model_dir() const { return model_dir_; }
  // Total bytes of the weight files under the weights directory.
  uint64_t weight_file_bytes() const { return weight_file_bytes_; }
  // The shard's fingerprint: which exact build a report judged. sha256 over the program file
  // and every regular file of the weights directory (definition in runtime/format/README.md,
  // "Shard fingerprint"; validators/mac/ computes the same in Python). Two shards that differ
  // in any weight byte never share it. Computed on first call (reads every weight byte once),
  // then cached. Errors name the file that could not be read.
  Result<std::string> fingerprint() const;
  // The files the fingerprint covers, sorted as it hashes them (relative path, size, sha256):
  // lets a refusal name the files in which two builds differ.
  struct FingerprintFile {
    std::string path;  // relative to the shard directory, '/' separators
    uint64_t size = 0;
    std::string sha256;
  };
  Result<std::vector<FingerprintFile>> fingerprint_files() const;

  // Maps "@model_path/weights/weight.bin" to a file inside the shard (never outside it).
  Result<std::string> blob_path(const std::string& path_in_program) const;
  // Opens (once, then cached) the blob file a BlobRef names.
  Result<std::shared_ptr<const BlobFile>> blob_file(const BlobRef& ref) const;
  // Resolves a tensor literal: inline values as-is, blob values as views into the mapped
  // file after checking dtype, size and bounds against `value.type`.
  Result<Tensor> resolve(const Value& value) const;

 private:
  std::string path_;
  ShardForm form_ = ShardForm::kCompiled;
  Program program_;
  ModelInfo info_;
  std::string program_file_;
  std::string program_sha256_;
  std::string model_dir_;
  uint64_t weight_file_bytes_ = 0;
  mutable std::mutex blob_mutex_;
  mutable std::map<std::string, std::shared_ptr<const BlobFile>> blob_files_;
  mutable std::mutex fingerprint_mutex_;
  mutable std::string fingerprint_;
  mutable std::vector<FingerprintFile> fingerprint_files_;

  friend Result<std::shared_ptr<Shard>> open_shard_impl(const std::string& path);
};

}  // namespace sg
