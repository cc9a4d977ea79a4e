// Hashing whole files in bounded memory: the shard fingerprint and every provenance sha256
// read each byte of files that can be tens of gigabytes (a whole model's weight.bin).
#pragma once

#include "shardgate/io.h"

#include <string>

namespace sg {

// Lower-case hex sha256 of a mapped file, read window by window: each window's pages are
// dropped from the mapping once hashed (madvise MADV_DONTNEED), so the resident memory stays
// one window (kHashWindowBytes) whatever the file's size. Touching the mapping afterwards is
// still correct (the pages are faulted in again from the file).
inline constexpr size_t kHashWindowBytes = size_t{8} << 20;
std::string sha256_of_mapping(const MappedFile& file);

}  // namespace sg
