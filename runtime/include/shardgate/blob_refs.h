// The weight references of a program: every BLOBFILE(path, offset) literal, wherever it sits
// (op inputs, attributes, list elements, dict entries, nested blocks, every function).
#pragma once

#include "shardgate/program.h"
#include "shardgate/status.h"

#include <vector>

namespace sg {

class Shard;

void collect_blob_refs(const Block& block, std::vector<BlobRef>& out);
std::vector<BlobRef> collect_blob_refs(const Program& program);

// Checks every weight reference of the shard against its blob metadata record (sentinel,
// dtype, size, bounds, no overlap with a metadata record), touching only the records: a
// truncated or corrupt weight.bin is an input error for every command that reads the shard,
// not only for those that happen to read that weight (golden-validator weights reads only the
// compressed ones). Errors name the file and the offset.
Status verify_blob_refs(const Shard& shard);

}  // namespace sg
