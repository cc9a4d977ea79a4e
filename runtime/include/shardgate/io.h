// File access: memory-mapped read-only files, whole-file reads, atomic writes, sha256.
#pragma once

#include "shardgate/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// Every file the tools read is opened non-blocking and must be a regular file: a FIFO, device
// or socket in place of an input is refused (never waited on), naming the path and what it is.
// A Git LFS pointer in place of a file's contents is refused as such.
//
// Reads a whole regular file of at most `max_bytes` (limits.h); `kind` ("chain manifest")
// names the input in the message about the limit.
Result<std::string> read_file(const std::string& path, uint64_t max_bytes, std::string_view kind);
Result<std::string> read_file(const std::string& path);  // limits::kWholeFileBytes
// "a FIFO", "a directory", ... for the file type bits of a stat mode.
const char* file_type_phrase(unsigned mode);
// True when `head` (the first bytes of a file) is a Git LFS pointer ("version
// https://git-lfs.github.com/spec/v1"), i.e. the repository was cloned without `git lfs pull`.
bool is_lfs_pointer(std::span<const std::byte> head);
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// The last component of `path`, trailing '/' ignored: "out/layer_00.mlmodelc/" ->
// "layer_00.mlmodelc". A path without '/' is returned whole.
std::string path_basename(std::string_view path);
// The components of `path`, empty and "." ones skipped: "/a/b//./c/" -> {"a", "b", "c"}.
std::vector<std::string> path_components(std::string_view path);
// The last `n` components of `path` joined by '/', empty and "." components skipped:
// ("out/layers/07/model.mlpackage/", 2) -> "07/model.mlpackage"; the whole path's components
// when it has fewer.
std::string path_tail(std::string_view path, size_t n);
// For each path, its shortest tail that no other path of the list ends with: the file name,
// or "07/model.mlpackage" when another path also ends in model.mlpackage (a model's shards
// often share a file name). A path no tail distinguishes (listed twice, or the whole end of
// another) keeps all its components.
std::vector<std::string> distinct_path_tails(const std::vector<std::string>& paths);

// Writes `contents` to `path` (runtime/core/write_file.cpp):
//  - "-" is standard output;
//  - an existing target that is not a regular file (a character device such as a copy of
//    /dev/null, a FIFO, /dev/stdout) is written directly and never renamed over;
//  - otherwise atomically: the bytes go to an unnamed O_TMPFILE file in the target's directory
//    (a named temporary "<path>.tmp.<pid>.<random>" where the filesystem has no O_TMPFILE),
//    are fsynced, and appear under `path` by linkat (new file) or rename (replacing one). A
//    reader never sees a half-written file; a kill leaves no temporary in the common case, and
//    temporaries of `path` left by a dead process are removed by the next write.
// A symbolic link to a regular file stays a link: its target is replaced.
Status write_file_atomic(const std::string& path, std::string_view contents);

// Lower-case hex sha256 of a byte range / a whole file.
std::string sha256_hex(std::span<const std::byte> data);
Result<std::string> sha256_file(const std::string& path);

}  // namespace sg
