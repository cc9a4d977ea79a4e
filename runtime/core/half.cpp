// Bulk fp16 conversions: F16C (vcvtph2ps / vcvtps2ph, exact IEEE round-to-nearest-even like the
// scalar code in half.h) when the CPU level allows, else the scalar loop. Picked at run time
// (shardgate/cpu.h), so the portable build uses F16C too.
#include "shardgate/half.h"

#include "core/half_variants.h"
#include "shardgate/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SG_HALF_X86 1
#endif

namespace sg {
namespace {

void to_f32_scalar(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
void to_f16_scalar(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
void round_scalar(float* data, size_t n) {
  for (size_t i = 0; i < n; ++i) data[i] = round_to_f16(data[i]);
}

#if SG_HALF_X86
__attribute__((target("avx,f16c"))) void to_f32_f16c(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  to_f32_scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx,f16c"))) void to_f16_f16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(src + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
  }
  to_f16_scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx,f16c"))) void round_f16c(float* data, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(data + i);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(_mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT)));
  }
  round_scalar(data + i, n - i);
}

bool use_f16c() { return cpu_level() >= CpuLevel::kAvx2; }  // every level above scalar has F16C
#endif

}  // namespace

const char* half_span_variant_name(CpuLevel level) {
#if SG_HALF_X86
  if (level >= CpuLevel::kAvx2) return "f16_convert_8__f16c";
#else
  (void)level;
#endif
  return "f16_convert_1__scalar";
}

void f16_to_f32_span(const uint16_t* src, float* dst, size_t n) {
#if SG_HALF_X86
  if (use_f16c()) return to_f32_f16c(src, dst, n);
#endif
  to_f32_scalar(src, dst, n);
}

void f32_to_f16_span(const float* src, uint16_t* dst, size_t n) {
#if SG_HALF_X86
  if (use_f16c()) return to_f16_f16c(src, dst, n);
#endif
  to_f16_scalar(src, dst, n);
}

void round_to_f16_span(float* data, size_t n) {
#if SG_HALF_X86
  if (use_f16c()) return round_f16c(data, n);
#endif
  round_scalar(data, n);
}

}  // namespace sg
