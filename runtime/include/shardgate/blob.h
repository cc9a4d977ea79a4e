// weight.bin: MIL blob storage version 2 (runtime/format/README.md), memory-mapped and
// bounds-checked. Every check has its own message naming the file and the byte offset.
#pragma once

#include "shardgate/dtype.h"
#include "shardgate/io.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sg {

inline constexpr uint32_t kBlobSentinel = 0xDEADBEEFu;
inline constexpr uint32_t kBlobStorageVersion = 2;
inline constexpr uint64_t kBlobAlignment = 64;

struct BlobInfo {
  uint64_t metadata_offset = 0;  // where the 64-byte metadata record sits
  DType dtype = DType::kInvalid;
  uint64_t data_offset = 0;
  uint64_t size_bytes = 0;
  uint64_t padding_bits = 0;  // unused bits at the end (sub-byte types)
  // Element count the blob holds: size*8/bits, minus padding for sub-byte types.
  uint64_t element_count() const;
};

class BlobFile {
 public:
  // Maps the file and checks the 64-byte header (size, version 2). `records`: the metadata
  // offsets the program references in this file; info_at refuses a blob whose data overlaps
  // any of them that holds a record (or its own record), since those bytes would be read as
  // weights. An offset that holds no record is left to the op that references it.
  static Result<std::shared_ptr<const BlobFile>> open(const std::string& path,
                                                      std::vector<uint64_t> records = {});

  const std::string& path() const { return file_->path(); }
  uint64_t file_size() const { return file_->size(); }
  uint32_t count() const { return count_; }
  // The whole mapped file (read-only): the chain's helper thread faults its pages in before
  // the step that reads them runs (runtime/golden/shard_pipeline.h).
  std::span<const std::byte> bytes() const { return file_->bytes(); }

  // Reads and checks the metadata record at `metadata_offset`: alignment, sentinel, dtype
  // code, data range inside the file, padding consistent with the dtype.
  Result<BlobInfo> info_at(uint64_t metadata_offset) const;
  // A read-only view of the blob as `dtype` with `shape`: the blob's dtype must be `dtype`
  // and it must hold exactly numel(shape) elements.
  Result<Tensor> tensor_at(uint64_t metadata_offset, DType dtype, const Shape& shape) const;
  // All records, walking from offset 64 (`count` of them).
  Result<std::vector<BlobInfo>> walk() const;

 private:
  std::shared_ptr<const MappedFile> file_;
  uint32_t count_ = 0;
  std::vector<uint64_t> records_;  // sorted, unique
};

}  // namespace sg
