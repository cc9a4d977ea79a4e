// Run-time CPU dispatch. The default build is portable (x86-64 baseline, no -march): kernels
// that have vector variants pick one at run time from what the CPU reports, so one binary runs
// on any x86-64 machine and still uses AVX2/FMA/F16C or AVX-512 where present.
//
// Levels, each a superset of the one before:
//   scalar  portable C++ (also every non-x86 build)
//   avx2    AVX2 + FMA + F16C
//   avx512  avx2 + AVX-512F + AVX-512VL (32 zmm registers: 6-row GEMM groups, two rows per zmm)
//   avx512fp16  avx512 + AVX-512BW + AVX512-FP16 (Sapphire Rapids and later Intel cores; not
//           Zen 4): fp16 arithmetic for the 8-bit weight decode (one rounding, as the contract's
//           fp16 product rounds once). Only in builds whose compiler has its intrinsics.
// Numerics: every variant computes the same products in the same lane order and reduction
// tree; avx2 and avx512 fuse multiply-add (one rounding), scalar rounds the product first, so
// scalar results may differ from the vector ones in the last bits. Results never depend on the
// thread count. Kernel variants and their names: runtime/ops/README.md ("Kernel variants").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

enum class CpuLevel : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Fp16 = 3 };
// Every level, lowest first (parse_cpu_level, tests that run each level the CPU has).
inline constexpr CpuLevel kCpuLevels[] = {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512,
                                          CpuLevel::kAvx512Fp16};

const char* cpu_level_name(CpuLevel level);  // "scalar", "avx2", "avx512", "avx512fp16"
std::optional<CpuLevel> parse_cpu_level(std::string_view name);

// What this CPU supports and this build can use (detected once).
CpuLevel cpu_level_detected();
// What the kernels use: the detected level, lowered by the environment variable SG_CPU_LEVEL
// (scalar|avx2|avx512|avx512fp16; read once at the first call; a level above the CPU's is clamped to it;
// any other value is ignored) or by set_cpu_level.
CpuLevel cpu_level();
// Sets the level the kernels use (clamped to the detected one) and returns it. For tests and
// for comparing variants; not meant to change while kernels run.
CpuLevel set_cpu_level(CpuLevel level);

// The names of the kernel variants the current level runs (XNNPACK-style grammar
// "<kernel>_<tile>_<types>__<isa>", e.g. "gemm_x_wt_8x6__avx512f"), for --profile output.
std::vector<std::string> active_kernel_variants();

}  // namespace sg
