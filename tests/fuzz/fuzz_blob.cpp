// weight.bin metadata (runtime/format/blob.cpp): the file header, every 64-byte metadata
// record the header counts, and views of the blobs they describe.
#include "fuzz_support.h"
#include "shardgate/blob.h"
#include "shardgate/tensor.h"

#include <cstdint>

namespace {
// Decoding a view reads every element; small blobs only, so one input stays fast.
constexpr uint64_t kMaxDecodedElements = 1 << 16;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      sg::fuzz::write_scratch("weights/weight.bin", sg::fuzz::as_text(data, size));
  auto blob = sg::BlobFile::open(path);
  if (!blob) return 0;
  auto records = (*blob)->walk();
  if (!records) return 0;
  for (const sg::BlobInfo& info : *records) {
    const uint64_t n = info.element_count();
    auto view = (*blob)->tensor_at(info.metadata_offset, info.dtype,
                                   {static_cast<int64_t>(n)});
    if (view && n <= kMaxDecodedElements) (void)sg::to_f32(*view);
  }
  return 0;
}
