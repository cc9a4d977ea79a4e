#include "shardgate/cpu.h"

#include <atomic>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace sg {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// Feature bits from CPUID, and XGETBV: the OS must save the vector registers the level uses
// (YMM for AVX2, ZMM/opmask for AVX-512), or their instructions fault.
CpuLevel detect() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return CpuLevel::kScalar;
  const bool fma = (c & (1u << 12)) != 0;
  const bool osxsave = (c & (1u << 27)) != 0;
  const bool avx = (c & (1u << 28)) != 0;
  const bool f16c = (c & (1u << 29)) != 0;
  if (!osxsave || !avx) return CpuLevel::kScalar;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_saved = (xcr0_lo & 0x6u) == 0x6u;
  const bool zmm_saved = (xcr0_lo & 0xE6u) == 0xE6u;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return CpuLevel::kScalar;
  const bool avx2 = (b & (1u << 5)) != 0;
  const bool avx512f = (b & (1u << 16)) != 0;
  const bool avx512vl = (b & (1u << 31)) != 0;
  const bool avx512bw = (b & (1u << 30)) != 0;
  const bool avx512fp16 = (d & (1u << 23)) != 0;
  if (!(ymm_saved && avx2 && fma && f16c)) return CpuLevel::kScalar;
  if (!(zmm_saved && avx512f && avx512vl)) return CpuLevel::kAvx2;
#if SG_HAVE_AVX512FP16
  if (avx512bw && avx512fp16) return CpuLevel::kAvx512Fp16;
#else
  (void)avx512bw;
  (void)avx512fp16;
#endif
  return CpuLevel::kAvx512;
}
#else
CpuLevel detect() { return CpuLevel::kScalar; }
#endif

CpuLevel clamp(CpuLevel level) {
  return static_cast<uint8_t>(level) < static_cast<uint8_t>(cpu_level_detected()) ? level
                                                                                  : cpu_level_detected();
}

std::atomic<int>& current() {
  static std::atomic<int> level = [] {
    CpuLevel l = cpu_level_detected();
    if (const char* env = std::getenv("SG_CPU_LEVEL")) {
      if (auto asked = parse_cpu_level(env)) l = clamp(*asked);
    }
    return static_cast<int>(l);
  }();
  return level;
}

}  // namespace

const char* cpu_level_name(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar: return "scalar";
    case CpuLevel::kAvx2: return "avx2";
    case CpuLevel::kAvx512: return "avx512";
    case CpuLevel::kAvx512Fp16: return "avx512fp16";
  }
  return "scalar";
}

std::optional<CpuLevel> parse_cpu_level(std::string_view name) {
  for (CpuLevel l : kCpuLevels) {
    if (name == cpu_level_name(l)) return l;
  }
  return std::nullopt;
}

CpuLevel cpu_level_detected() {
  static const CpuLevel detected = detect();
  return detected;
}

CpuLevel cpu_level() { return static_cast<CpuLevel>(current().load(std::memory_order_relaxed)); }

CpuLevel set_cpu_level(CpuLevel level) {
  const CpuLevel l = clamp(level);
  current().store(static_cast<int>(l), std::memory_order_relaxed);
  return l;
}

}  // namespace sg
