// Paths many tests share: the built tools, the bundled sample, the corpus model, the chain data.
// One definition here instead of one per test file (which also lets the files of an area be
// compiled together in a unity build: CI's sanitizer build, README "CI").
#pragma once

#include <string>

namespace sg::testing {

inline const std::string kAneValidator = SG_BINARY_DIR "/validators/ane-validator";
inline const std::string kGoldenValidator = SG_BINARY_DIR "/validators/golden-validator";
inline const std::string kSampleDir = SG_SOURCE_DIR "/goldens/sample/";
inline const std::string kSileroDir = SG_TEST_DATA_DIR "/corpus/silero-vad/";
// The corpus model's three variants under kSileroDir (dense, 4-bit palette, int8), each there as
// .mlmodelc and .mlpackage.
inline const char* const kSileroModels[] = {"silero-vad-unified-v6.0.0", "unified_palette_4bit",
                                            "unified_int8"};
inline const std::string kChainDataDir = SG_TEST_DATA_DIR "/chain/";

// A path under the source tree from its relative form ("goldens/sample/...").
inline std::string source_path(const std::string& rel) {
  return std::string(SG_SOURCE_DIR) + "/" + rel;
}

}  // namespace sg::testing
