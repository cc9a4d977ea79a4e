// Input limits: every size the readers accept, in one place. A value over a limit is an input
// error (exit 2) naming the file, checked before anything is parsed or allocated. The README
// ("Limits") lists them; tests/robustness checks each one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sg::limits {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// JSON inputs: nesting depth (the deepest real file we read nests 8 levels) and bytes per kind.
inline constexpr int kJsonMaxDepth = 64;
inline constexpr uint64_t kChainManifestBytes = 16 * kMiB;
inline constexpr uint64_t kGoldenManifestBytes = 16 * kMiB;
inline constexpr uint64_t kGateFileBytes = 4 * kMiB;
inline constexpr uint64_t kComputePlanBytes = 256 * kMiB;  // one entry per op of a large model
inline constexpr uint64_t kReportBytes = 256 * kMiB;        // regate reads saved reports
inline constexpr uint64_t kPackageManifestBytes = 16 * kMiB;
inline constexpr uint64_t kMetadataBytes = 64 * kMiB;
inline constexpr uint64_t kSafetensorsHeaderBytes = 100 * kMiB;  // the safetensors format's own cap

// Program files: model.mil text and the .mlpackage protobuf (protobuf's own 2 GiB cap).
inline constexpr uint64_t kProgramTextBytes = uint64_t{1} << 30;
inline constexpr uint64_t kProgramProtobufBytes = uint64_t{2} << 30;

// Declared shapes, one rule for every reader (model.mil text, the .mlpackage protobuf's
// TensorType and model description, metadata.json, .npy and safetensors headers): at most
// kMaxRank dimensions, each in [0, kMaxDim] (2^36: no tensor may hold more bytes, tensor.h's
// kMaxTensorBytes, so a larger dimension can never be allocated). The messages below are the one
// wording of a broken limit; each reader puts its file and place in front.
inline constexpr size_t kMaxRank = 32;
inline constexpr int64_t kMaxDim = int64_t{1} << 36;

inline constexpr bool rank_in_limit(int64_t rank) {
  return rank >= 0 && static_cast<uint64_t>(rank) <= kMaxRank;
}
inline constexpr bool dim_in_limit(int64_t dim) { return dim >= 0 && dim <= kMaxDim; }
// "rank 33 is out of range [0, 32]"
std::string rank_limit_message(std::string_view rank);
std::string rank_limit_message(int64_t rank);
// "dimension 99999999999 is out of range [0, 68719476736]" (the text as written when it does
// not fit an integer).
std::string dim_limit_message(std::string_view dim);
std::string dim_limit_message(int64_t dim);
std::string dim_limit_message(uint64_t dim);

// Any other whole-file read.
inline constexpr uint64_t kWholeFileBytes = uint64_t{4} << 30;

}  // namespace sg::limits
