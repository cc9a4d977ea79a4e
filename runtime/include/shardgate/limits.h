// Input limits: every size the readers accept, in one place. A value over a limit is an input
// error (exit 2) naming the file, checked before anything is parsed or allocated. The README
// ("Limits") lists them; tests/robustness checks each one.
#pragma once

#include <cstdint>

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

// Any other whole-file read.
inline constexpr uint64_t kWholeFileBytes = uint64_t{4} << 30;

}  // namespace sg::limits
