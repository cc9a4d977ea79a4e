// File access: memory-mapped read-only files, whole-file reads, atomic writes, sha256.
#pragma once

#include "shardgate/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace sg {

class MappedFile {
 public:
  // Maps the whole file read-only. An empty file maps to a zero-length span.
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, static_cast<size_t>(size_)}; }

 private:
  MappedFile() = default;
  std::string path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;
};

Result<std::string> read_file(const std::string& path);
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// The last component of `path`, trailing '/' ignored: "out/layer_00.mlmodelc/" ->
// "layer_00.mlmodelc". A path without '/' is returned whole.
std::string path_basename(std::string_view path);

// Writes `contents` to `path` atomically: a temporary file in the same directory, fsync,
// then rename. A reader never sees a half-written report.
Status write_file_atomic(const std::string& path, std::string_view contents);

// Lower-case hex sha256 of a byte range / a whole file.
std::string sha256_hex(std::span<const std::byte> data);
Result<std::string> sha256_file(const std::string& path);

}  // namespace sg
