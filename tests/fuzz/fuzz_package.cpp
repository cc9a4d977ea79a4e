// Package and compiled-model metadata: an .mlpackage's Manifest.json
// (runtime/format/package_manifest.cpp) and an .mlmodelc's metadata.json
// (runtime/format/compiled_metadata.cpp). The first byte picks the file; the rest is its text.
#include "fuzz_support.h"
#include "shardgate/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text = sg::fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    sg::fuzz::write_scratch("p.mlpackage/Manifest.json", text);
    (void)sg::read_package_manifest(sg::fuzz::scratch_dir() + "/p.mlpackage");
  } else {
    sg::fuzz::write_scratch("m.mlmodelc/metadata.json", text);
    (void)sg::read_compiled_metadata(sg::fuzz::scratch_dir() + "/m.mlmodelc");
  }
  return 0;
}
