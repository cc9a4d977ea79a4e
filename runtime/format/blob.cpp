// weight.bin reader: MIL blob storage version 2 (runtime/format/README.md, Blob storage v2;
// coremltools mlmodel/src/MILBlob/Blob/StorageFormat.hpp). The file is memory-mapped once; tensors
// are read-only views into the mapping, so opening a multi-gigabyte shard copies nothing.
#include "shardgate/blob.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace sg {
namespace {

constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kMetadataBytes = 64;

uint32_t load_u32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);  // the format is little-endian, like every host we run on
  return v;
}

uint64_t load_u64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

uint64_t BlobInfo::element_count() const {
  const int bits = dtype_bits(dtype);
  if (bits <= 0) return 0;
  if (bits < 8) {
    if (size_bytes > UINT64_MAX / 8 || size_bytes * 8 < padding_bits) return 0;
    return (size_bytes * 8 - padding_bits) / static_cast<uint64_t>(bits);
  }
  return size_bytes / static_cast<uint64_t>(bits / 8);
}

Result<std::shared_ptr<const BlobFile>> BlobFile::open(const std::string& path,
                                                       std::vector<uint64_t> records) {
  SG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  SG_CHECK(file->size() >= kHeaderBytes, ErrorCode::kFormat,
           "{}: file is {} bytes, shorter than the {}-byte blob storage header", path,
           file->size(), kHeaderBytes);
  const uint32_t count = load_u32(file->data());
  const uint32_t version = load_u32(file->data() + 4);
  SG_CHECK(version == kBlobStorageVersion, ErrorCode::kFormat,
           "{}: blob storage header at offset 0: version {}, expected {}", path, version,
           kBlobStorageVersion);
  // Every blob needs at least its metadata record after the header.
  SG_CHECK(count <= (file->size() - kHeaderBytes) / kMetadataBytes, ErrorCode::kFormat,
           "{}: blob storage header at offset 0: count {} cannot fit in a {}-byte file", path,
           count, file->size());
  auto blob = std::make_shared<BlobFile>();
  blob->file_ = std::move(file);
  blob->count_ = count;
  // Only offsets that hold a record (aligned, inside the file, with the sentinel): a bad
  // reference is the program's error, reported where the program uses it, and must not make
  // a sound blob look like it overlaps something.
  std::erase_if(records, [&](uint64_t r) {
    const uint64_t size = blob->file_->size();
    return r % kBlobAlignment != 0 || r < kHeaderBytes || r > size ||
           size - r < kMetadataBytes || load_u32(blob->file_->data() + r) != kBlobSentinel;
  });
  std::sort(records.begin(), records.end());
  records.erase(std::unique(records.begin(), records.end()), records.end());
  blob->records_ = std::move(records);
  return std::shared_ptr<const BlobFile>(std::move(blob));
}

Result<BlobInfo> BlobFile::info_at(uint64_t metadata_offset) const {
  const std::string& name = path();
  const uint64_t size = file_size();
  SG_CHECK(metadata_offset % kBlobAlignment == 0, ErrorCode::kFormat,
           "{}: blob metadata at offset {}: offset is not a multiple of {}", name,
           metadata_offset, kBlobAlignment);
  SG_CHECK(metadata_offset >= kHeaderBytes, ErrorCode::kFormat,
           "{}: blob metadata at offset {}: offset points into the file header", name,
           metadata_offset);
  SG_CHECK(metadata_offset <= size && size - metadata_offset >= kMetadataBytes,
           ErrorCode::kFormat,
           "{}: blob metadata at offset {}: record runs past the end of the {}-byte file", name,
           metadata_offset, size);
  const std::byte* rec = file_->data() + metadata_offset;
  const uint32_t sentinel = load_u32(rec);
  SG_CHECK(sentinel == kBlobSentinel, ErrorCode::kFormat,
           "{}: blob metadata at offset {}: sentinel 0x{:08X}, expected 0x{:08X}", name,
           metadata_offset, sentinel, kBlobSentinel);
  const uint32_t code = load_u32(rec + 4);
  const std::optional<DType> dtype = dtype_from_blob_code(code);
  SG_CHECK(dtype.has_value(), ErrorCode::kUnsupported,
           "{}: blob metadata at offset {}: unknown blob data type code {}", name,
           metadata_offset, code);
  BlobInfo info;
  info.metadata_offset = metadata_offset;
  info.dtype = *dtype;
  info.size_bytes = load_u64(rec + 8);
  info.data_offset = load_u64(rec + 16);
  // Bytes 32..63 are reserved; older writers left garbage there, so they are not read.
  const uint64_t padding = load_u64(rec + 24);

  SG_CHECK(info.data_offset % kBlobAlignment == 0, ErrorCode::kFormat,
           "{}: blob metadata at offset {}: data offset {} is not a multiple of {}", name,
           metadata_offset, info.data_offset, kBlobAlignment);
  SG_CHECK(info.data_offset >= kHeaderBytes, ErrorCode::kFormat,
           "{}: blob metadata at offset {}: data offset {} points into the file header", name,
           metadata_offset, info.data_offset);
  SG_CHECK(info.data_offset <= size && info.size_bytes <= size - info.data_offset,
           ErrorCode::kFormat,
           "{}: blob metadata at offset {}: data [{}, +{}) runs past the end of the {}-byte file",
           name, metadata_offset, info.data_offset, info.size_bytes, size);

  // A data range over a metadata record would hand the record's bytes (sentinel, offsets) to
  // the op as weights: its own record, or another one the program reads.
  if (info.size_bytes > 0) {
    const uint64_t data_end = info.data_offset + info.size_bytes;
    auto overlaps = [&](uint64_t rec) {
      return rec < data_end && info.data_offset < rec + kMetadataBytes;
    };
    SG_CHECK(!overlaps(metadata_offset), ErrorCode::kFormat,
             "{}: blob metadata at offset {}: data [{}, +{}) overlaps its own metadata record",
             name, metadata_offset, info.data_offset, info.size_bytes);
    const uint64_t from = info.data_offset >= kMetadataBytes ? info.data_offset - kMetadataBytes + 1 : 0;
    for (auto it = std::lower_bound(records_.begin(), records_.end(), from);
         it != records_.end() && *it < data_end; ++it) {
      SG_CHECK(!overlaps(*it), ErrorCode::kFormat,
               "{}: blob metadata at offset {}: data [{}, +{}) overlaps the metadata record at "
               "offset {}",
               name, metadata_offset, info.data_offset, info.size_bytes, *it);
    }
  }

  const int bits = dtype_bits(info.dtype);
  if (bits < 8) {
    SG_CHECK(padding <= 7, ErrorCode::kFormat,
             "{}: blob metadata at offset {}: padding of {} bits, expected 0..7", name,
             metadata_offset, padding);
    SG_CHECK(info.size_bytes > 0 || padding == 0, ErrorCode::kFormat,
             "{}: blob metadata at offset {}: padding of {} bits in an empty blob", name,
             metadata_offset, padding);
    SG_CHECK((info.size_bytes * 8 - padding) % static_cast<uint64_t>(bits) == 0,
             ErrorCode::kFormat,
             "{}: blob metadata at offset {}: {} bytes with {} padding bits do not hold a whole "
             "number of {} elements",
             name, metadata_offset, info.size_bytes, padding, dtype_name(info.dtype));
    info.padding_bits = padding;
  } else {
    // The padding field only has a meaning for sub-byte types; byte-sized blobs ignore it,
    // like coremltools' StorageReader does.
    SG_CHECK(info.size_bytes % static_cast<uint64_t>(bits / 8) == 0, ErrorCode::kFormat,
             "{}: blob metadata at offset {}: {} bytes is not a whole number of {} elements",
             name, metadata_offset, info.size_bytes, dtype_name(info.dtype));
  }
  return info;
}

Result<Tensor> BlobFile::tensor_at(uint64_t metadata_offset, DType dtype,
                                   const Shape& shape) const {
  SG_ASSIGN_OR_RETURN(BlobInfo info, info_at(metadata_offset));
  SG_CHECK(info.dtype == dtype, ErrorCode::kShape,
           "{}: blob at offset {}: stored as {}, but the program declares {}", path(),
           metadata_offset, dtype_name(info.dtype), dtype_name(dtype));
  const std::string where = fmt::format("{}: blob at offset {}", path(), metadata_offset);
  auto n = checked_numel(shape).with_context(where);
  if (!n.is_ok()) return n.status();
  SG_CHECK(static_cast<uint64_t>(*n) == info.element_count(), ErrorCode::kShape,
           "{}: blob at offset {}: holds {} {} elements ({} bytes), but tensor<{}, {}> needs {}",
           path(), metadata_offset, info.element_count(), dtype_name(info.dtype),
           info.size_bytes, dtype_name(dtype), shape_str(shape), *n);
  return Tensor::view(dtype, shape, file_->data() + info.data_offset,
                      static_cast<size_t>(info.size_bytes), file_)
      .with_context(where);
}

Result<std::vector<BlobInfo>> BlobFile::walk() const {
  std::vector<BlobInfo> out;
  out.reserve(count_);
  uint64_t offset = kHeaderBytes;
  for (uint32_t i = 0; i < count_; ++i) {
    auto info = info_at(offset);
    if (!info.is_ok()) {
      Status st = std::move(info).take_status();
      return Status(st.code(), fmt::format("{} (walking record #{} of {})", st.message(), i, count_));
    }
    out.push_back(*info);
    // info_at bounded data_offset + size by the file size, so this cannot overflow.
    const uint64_t end = info->data_offset + info->size_bytes;
    offset = (end + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  }
  return out;
}

}  // namespace sg
