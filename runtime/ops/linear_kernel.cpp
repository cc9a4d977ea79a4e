// gemm_x_wt: the skinny-M product behind every weight-consuming op (see linear_kernel.h).
//
// Shape of the work in LLM shards: M = 8 tokens (or a few conv positions), N and K in the
// thousands, W streamed once from memory in fp16. The kernel therefore walks W row by row,
// widens 8 weights at a time in registers, and feeds each widened vector to up to 8 token
// accumulators (bench/README.md has its speed). Activations are repacked as [k/8][token][8] so the token rows
// do not alias in L1. W rows are processed in blocks sized for L2 so that, when M spans several
// token blocks, a block of W is reused from cache instead of streamed again.
#include "ops/linear_kernel.h"

#include "ops/aligned_floats.h"
#include "ops/gemm_panel.h"
#include "ops/register_decoders.h"
#include "ops/row_groups.h"

#include "core/parallel.h"
#include "shardgate/cpu.h"
#include "shardgate/half.h"

#include <algorithm>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SG_GEMM_X86 1
// Vector variants are compiled for their instruction set by function attribute, not by -m
// flags on the file: the rest of the file (and every inline function it shares with other
// files) stays baseline x86-64, so nothing outside these functions can use an instruction the
// CPU lacks. Which variant runs is decided per call from cpu_level().
#define SG_TARGET_AVX2_FMA __attribute__((target("avx2,fma,f16c")))
#define SG_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))
#endif

namespace sg {
namespace {

constexpr int kLanes = 8;
constexpr int kTokenBlock = 8;
constexpr int64_t kRowBlockBytes = 128 * 1024;
// Below this many multiply-adds a product stays on the calling thread: spawning costs more.
constexpr int64_t kParallelMinWork = int64_t{1} << 18;

inline float widen(float v) { return v; }
inline float widen(uint16_t v) { return f16_to_f32(v); }

// Packs rows [m0, m0 + mb) of X as [K8][stride][8], zero-padded past K and, when stride > mb,
// with zero token rows mb .. stride - 1 (a kernel for `stride` tokens then serves mb).
void pack_tokens(const float* x, int64_t ldx, int64_t m0, int mb, int64_t K, float* dst, int stride = 0) {
  if (stride < mb) stride = mb;
  const int64_t k8 = (K + kLanes - 1) / kLanes;
  for (int64_t kb = 0; kb < k8; ++kb) {
    for (int t = 0; t < stride; ++t) {
      const float* row = x + (m0 + t) * ldx;
      float* d = dst + (kb * stride + t) * kLanes;
      for (int l = 0; l < kLanes; ++l) {
        const int64_t k = kb * kLanes + l;
        d[l] = k < K && t < mb ? row[k] : 0.0f;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// scalar: the reference variant. The same 8 lanes and reduction tree as the vector variants;
// the product is rounded before the add (no fused multiply-add on the baseline ISA).
namespace scalar {

template <int MB, typename WT>
void dot_tokens(const float* xp, int64_t K, const WT* w, float* out) {
  float acc[MB][kLanes] = {};
  const int64_t k8 = (K + kLanes - 1) / kLanes;
  for (int64_t kb = 0; kb < k8; ++kb) {
    float wv[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const int64_t k = kb * kLanes + l;
      wv[l] = k < K ? widen(w[k]) : 0.0f;
    }
    const float* xb = xp + kb * MB * kLanes;
    for (int t = 0; t < MB; ++t) {
      for (int l = 0; l < kLanes; ++l) acc[t][l] += wv[l] * xb[t * kLanes + l];
    }
  }
  for (int t = 0; t < MB; ++t) {
    const float* a = acc[t];
    out[t] = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
  }
}

}  // namespace scalar

#if SG_GEMM_X86
// ---------------------------------------------------------------------------------------------
// avx2: one weight row at a time, 8 fp32 lanes, FMA, F16C widening.
namespace avx2 {

SG_TARGET_AVX2_FMA inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
SG_TARGET_AVX2_FMA inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }

// (a0+a4) + (a2+a6) + ((a1+a5) + (a3+a7)): the fixed reduction tree shared with scalar.
SG_TARGET_AVX2_FMA inline float hsum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// out[t] = Σ_k xp[t, k] · w[k] for the mb tokens packed in xp.
template <int MB, typename WT>
SG_TARGET_AVX2_FMA void dot_tokens(const float* xp, int64_t K, const WT* w, float* out) {
  __m256 acc[MB];
  for (int t = 0; t < MB; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t full = K / kLanes;
  for (int64_t kb = 0; kb < full; ++kb) {
    const __m256 wv = load8(w + kb * kLanes);
    const float* xb = xp + kb * MB * kLanes;
    for (int t = 0; t < MB; ++t) acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xb + t * kLanes), acc[t]);
  }
  if (const int64_t rest = K - full * kLanes; rest > 0) {
    alignas(32) float tail[kLanes] = {};
    for (int64_t j = 0; j < rest; ++j) tail[j] = widen(w[full * kLanes + j]);
    const __m256 wv = _mm256_load_ps(tail);
    const float* xb = xp + full * MB * kLanes;
    for (int t = 0; t < MB; ++t) acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xb + t * kLanes), acc[t]);
  }
  for (int t = 0; t < MB; ++t) out[t] = hsum8(acc[t]);
}

}  // namespace avx2

// ---------------------------------------------------------------------------------------------
// avx512: one zmm holds two weight rows × the same 8 k-lanes (rows n, n+1 in its low and high
// halves) and each token's 8-k activation chunk is broadcast to both halves, so one FMA does
// the work of two ymm FMAs of the avx2 variant. 3 row pairs × 8 tokens = 24 accumulators (of
// the 32 zmm registers); each activation load feeds 3 FMAs, i.e. 6 rows. Every half still sums
// its own (row, token) pair over k in the same lane order and the same tree as
// avx2::dot_tokens, so the result is bit-identical to the avx2 variant.
namespace avx512 {

constexpr int kRowGroup = kPairRowGroup;

// lo in the low 256 bits, hi in the high: on Zen 4, which runs 512-bit operations as two
// 256-bit halves, this join costs nothing.
SG_TARGET_AVX512 inline __m512 join_halves(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}
// Rows r0 and r1 at the same 8 k: low half r0, high half r1. Each fp16 row widened into its own
// 256-bit half, then the halves joined: joining the two 8-value fp16 loads inside one 256-bit
// register first (vinserti128, a shuffle) and widening that together cost the FMAs 3-5% on Zen
// 4 (the step alone: bench/kernel_steps_bench.cpp, fp16_insert128 against fp16_halves).
SG_TARGET_AVX512 inline __m512 load_pair(const uint16_t* r0, const uint16_t* r1) {
  return join_halves(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0))),
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1))));
}
SG_TARGET_AVX512 inline __m512 load_pair(const float* r0, const float* r1) {
  return join_halves(_mm256_loadu_ps(r0), _mm256_loadu_ps(r1));
}
// The 8 floats at p in both halves (vbroadcastf64x4: AVX-512F has no f32x8 form).
SG_TARGET_AVX512 inline __m512 broadcast8(const float* p) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(p))));
}
// The sums of both halves of v (rows n and n+1), each by avx2::hsum8's tree. Through memory:
// GCC 12's _mm512_extractf64x4_pd / _mm512_castps512_ps256 warn of an uninitialised operand.
SG_TARGET_AVX512 inline void hsum8_pair(__m512 v, float* lo, float* hi) {
  alignas(64) float b[16];
  _mm512_store_ps(b, v);
  *lo = avx2::hsum8(_mm256_load_ps(b));
  *hi = avx2::hsum8(_mm256_load_ps(b + 8));
}

// next: how many elements on from each row the next row group's same row starts (6 · ldw), or
// 0 where no whole group follows in memory (its rows are then asked for again, never past them).
template <typename WT>
SG_TARGET_AVX512 void dot_rows8(const float* xp, int64_t K, const WT* w, int64_t ldw, int64_t next, float* out) {
  static_assert(kRowGroup == 6 && kTokenBlock == 8);
  // Three named accumulator arrays rather than one [3][8] array: GCC keeps arrays of this
  // size in registers but spills a larger one to the stack on every iteration.
  __m512 a0[8], a1[8], a2[8];
#pragma GCC unroll 8
  for (int t = 0; t < 8; ++t) a0[t] = a1[t] = a2[t] = _mm512_setzero_ps();
  const WT* r[6];
  for (int i = 0; i < 6; ++i) r[i] = w + i * ldw;
  const int64_t full = K / kLanes;
  if (full > 0) {
    // The rows of step kb + 1 are loaded and widened during step kb's FMAs, as the register
    // kernel decodes one step ahead (register_kernel.inc): 15.4 -> 14.3 ms on the 8-token fp16
    // MoE shard (Zen 4). The last step loads its own columns again.
    __m512 v0 = load_pair(r[0], r[1]);
    __m512 v1 = load_pair(r[2], r[3]);
    __m512 v2 = load_pair(r[4], r[5]);
    for (int64_t kb = 0; kb < full; ++kb) {
      const int64_t k = kb * kLanes;
      // Each row 128 bytes ahead: six row streams of an fp16 weight are too many for the
      // hardware prefetcher alone (Xeon, 8-token MoE shard: none 17.0-17.8 ms, 256 B 15.5-15.7,
      // 512 B 15.6-16.3, 1 KiB 20; Zen 4, three rounds alternated: 64 B 13.9-14.8, 128 B
      // 13.6-13.9, 256 B 14.2-14.3, 512 B 15.7-16.0: bench/README.md).
      for (int i = 0; i < 6; ++i) _mm_prefetch(reinterpret_cast<const char*>(r[i] + k) + 128, _MM_HINT_T0);
      // And the next row group's same columns into L2, a whole group's run ahead of its use.
      // Each row starts a new 4 KiB page at K = 2048 (fp16), where the hardware prefetcher
      // stops, so a group began with six rows' waits on memory. Zen 4, 8-token fp16 MoE shard,
      // alternated: 13.1-13.4 ms without, 12.0-12.3 with (L2 or L3 hint alike; into L1 12.6;
      // two groups ahead 12.2; once per line, behind a branch, 12.8-12.9: bench/README.md).
      for (int i = 0; i < 6; ++i) _mm_prefetch(reinterpret_cast<const char*>(r[i] + next + k), _MM_HINT_T1);
      const int64_t kn = std::min(kb + 1, full - 1) * kLanes;
      const __m512 n0 = load_pair(r[0] + kn, r[1] + kn);
      const __m512 n1 = load_pair(r[2] + kn, r[3] + kn);
      const __m512 n2 = load_pair(r[4] + kn, r[5] + kn);
      const float* xb = xp + kb * 8 * kLanes;
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        const __m512 xv = broadcast8(xb + t * kLanes);
        a0[t] = _mm512_fmadd_ps(v0, xv, a0[t]);
        a1[t] = _mm512_fmadd_ps(v1, xv, a1[t]);
        a2[t] = _mm512_fmadd_ps(v2, xv, a2[t]);
      }
      v0 = n0;
      v1 = n1;
      v2 = n2;
    }
  }
  if (const int64_t rest = K - full * kLanes; rest > 0) {
    alignas(32) float t[6][kLanes] = {};
    for (int i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < rest; ++j) t[i][j] = widen(r[i][full * kLanes + j]);
    }
    const __m512 v0 = load_pair(t[0], t[1]), v1 = load_pair(t[2], t[3]), v2 = load_pair(t[4], t[5]);
    const float* xb = xp + full * 8 * kLanes;
    for (int u = 0; u < 8; ++u) {
      const __m512 xv = broadcast8(xb + u * kLanes);
      a0[u] = _mm512_fmadd_ps(v0, xv, a0[u]);
      a1[u] = _mm512_fmadd_ps(v1, xv, a1[u]);
      a2[u] = _mm512_fmadd_ps(v2, xv, a2[u]);
    }
  }
  for (int t = 0; t < 8; ++t) {
    hsum8_pair(a0[t], &out[0 * 8 + t], &out[1 * 8 + t]);
    hsum8_pair(a1[t], &out[2 * 8 + t], &out[3 * 8 + t]);
    hsum8_pair(a2[t], &out[4 * 8 + t], &out[5 * 8 + t]);
  }
}

#define SG_REGISTER_KERNEL dot_rows_registers
#define SG_REGISTER_KERNEL_TARGET SG_TARGET_AVX512
#include "ops/register_kernel.inc"
#undef SG_REGISTER_KERNEL
#undef SG_REGISTER_KERNEL_TARGET
#if SG_HAVE_AVX512FP16
// The same kernel for decoders that use AVX512-FP16 arithmetic (the avx512fp16 level).
#define SG_REGISTER_KERNEL dot_rows_registers_fp16
#define SG_REGISTER_KERNEL_TARGET SG_REGDEC_TARGET_FP16
#include "ops/register_kernel.inc"
#undef SG_REGISTER_KERNEL
#undef SG_REGISTER_KERNEL_TARGET
#endif

}  // namespace avx512
#endif

// ---------------------------------------------------------------------------------------------
// A variant is a tag type: how many weight rows a full token block takes at a time, the
// product of one row with up to 8 tokens, and of kRowGroup rows with 8 tokens. The one-row
// variants differ only in their dot product (an ISA namespace's dot_tokens, passed as Dot).
template <template <int, typename> class Dot>
struct OneRowVariant {
  static constexpr int kRowGroup = 1;
  template <int MB, typename WT>
  static void dot(const float* xp, int64_t K, const WT* w, float* out) {
    Dot<MB, WT>::run(xp, K, w, out);
  }
  template <typename WT>
  static void rows(const float* xp, int64_t K, const WT* w, int64_t, int64_t, float* out) {
    Dot<kTokenBlock, WT>::run(xp, K, w, out);
  }
};

template <int MB, typename WT>
struct ScalarDot {
  static void run(const float* xp, int64_t K, const WT* w, float* out) { scalar::dot_tokens<MB>(xp, K, w, out); }
};
using ScalarVariant = OneRowVariant<ScalarDot>;

#if SG_GEMM_X86
template <int MB, typename WT>
struct Avx2Dot {
  static void run(const float* xp, int64_t K, const WT* w, float* out) { avx2::dot_tokens<MB>(xp, K, w, out); }
};
using Avx2Variant = OneRowVariant<Avx2Dot>;

struct Avx512Variant {
  static constexpr int kRowGroup = avx512::kRowGroup;
  template <int MB, typename WT>
  static void dot(const float* xp, int64_t K, const WT* w, float* out) {
    avx2::dot_tokens<MB>(xp, K, w, out);
  }
  // next: see dot_rows8.
  template <typename WT>
  static void rows(const float* xp, int64_t K, const WT* w, int64_t ldw, int64_t next, float* out) {
    avx512::dot_rows8(xp, K, w, ldw, next, out);
  }
};
#endif

template <typename V, typename WT>
void dot_dispatch(int mb, const float* xp, int64_t K, const WT* w, float* out) {
  switch (mb) {
    case 1: V::template dot<1>(xp, K, w, out); break;
    case 2: V::template dot<2>(xp, K, w, out); break;
    case 3: V::template dot<3>(xp, K, w, out); break;
    case 4: V::template dot<4>(xp, K, w, out); break;
    case 5: V::template dot<5>(xp, K, w, out); break;
    case 6: V::template dot<6>(xp, K, w, out); break;
    case 7: V::template dot<7>(xp, K, w, out); break;
    default: V::template dot<8>(xp, K, w, out); break;
  }
}

template <typename V, typename WT>
void gemm_typed(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                float* y, int64_t ldy) {
  const int64_t N = w.n, K = w.k;
  const int64_t k8 = (K + kLanes - 1) / kLanes;
  const int64_t mblocks = (M + kTokenBlock - 1) / kTokenBlock;
  const int64_t block_floats = k8 * kTokenBlock * kLanes;
  AlignedFloats packed(static_cast<size_t>(mblocks * block_floats));  // 32-byte chunks on whole lines
  for (int64_t b = 0; b < mblocks; ++b) {
    const int mb = static_cast<int>(std::min<int64_t>(kTokenBlock, M - b * kTokenBlock));
    pack_tokens(x, ldx, b * kTokenBlock, mb, K, packed.data() + b * block_floats);
  }
  const int64_t row_bytes = std::max<int64_t>(1, K * static_cast<int64_t>(sizeof(WT)));
  // Whole row groups per block, so long rows (few per block) still run kRowGroup at a time.
  constexpr int kRowGroup = V::kRowGroup;
  const int64_t fit = std::max<int64_t>(kRowGroup, kRowBlockBytes / row_bytes / kRowGroup * kRowGroup);
  const int64_t rows_per_block = std::min<int64_t>(fit, N);
  const int64_t nblocks = (N + rows_per_block - 1) / rows_per_block;
  const bool small = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) <
                     static_cast<double>(kParallelMinWork);
  parallel_for(nblocks, small ? nblocks : 1, [&](int64_t b0, int64_t b1) {
    float out[kTokenBlock];
    // A streamed weight is decoded block by block into this thread's tile, which the block's
    // products then read from L2.
    std::vector<WT> tile(w.stream != nullptr ? static_cast<size_t>(rows_per_block * K) : 0);
    for (int64_t nb = b0; nb < b1; ++nb) {
      const int64_t n0 = nb * rows_per_block;
      const int64_t n1 = std::min(N, n0 + rows_per_block);
      // A streamed weight has no data pointer (w.data is null): its rows come from the tile.
      const WT* rows = nullptr;
      int64_t ld = w.ld;
      if (w.stream != nullptr) {
        w.stream->decode((w.row0 + n0) * K, (n1 - n0) * K, tile.data());
        rows = tile.data();
        ld = K;
      } else {
        rows = static_cast<const WT*>(w.data) + n0 * w.ld;
      }
      for (int64_t mbk = 0; mbk < mblocks; ++mbk) {
        const int64_t m0 = mbk * kTokenBlock;
        const int mb = static_cast<int>(std::min<int64_t>(kTokenBlock, M - m0));
        const float* xp = packed.data() + mbk * block_floats;
        int64_t n = n0;
        if (mb == kTokenBlock) {
          // Full token blocks: kRowGroup weight rows at a time.
          float grp[kRowGroup * kTokenBlock];
          for (; n + kRowGroup <= n1; n += kRowGroup) {
            // The next group's rows, within the same memory: the rest of the weight, or of the
            // tile a streamed weight was decoded into.
            const int64_t next = next_whole_group(n, kRowGroup, w.stream != nullptr ? n1 : N) - n;
            V::rows(xp, K, rows + (n - n0) * ld, ld, next * ld, grp);
            for (int r = 0; r < kRowGroup; ++r) {
              const float b = bias != nullptr ? bias[n + r] : 0.0f;
              for (int t = 0; t < mb; ++t) y[(m0 + t) * ldy + n + r] = grp[r * kTokenBlock + t] + b;
            }
          }
        }
        for (; n < n1; ++n) {
          dot_dispatch<V>(mb, xp, K, rows + (n - n0) * ld, out);
          const float b = bias != nullptr ? bias[n] : 0.0f;
          for (int t = 0; t < mb; ++t) y[(m0 + t) * ldy + n] = out[t] + b;
        }
      }
    }
  });
}

template <typename V>
void gemm_variant(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                  float* y, int64_t ldy) {
  if (w.dtype == DType::kF16) {
    gemm_typed<V, uint16_t>(x, M, ldx, w, bias, y, ldy);
  } else {
    gemm_typed<V, float>(x, M, ldx, w, bias, y, ldy);
  }
}

#if SG_GEMM_X86
// ---------------------------------------------------------------------------------------------
// A streamed weight with a register form (RegisterDecode), few tokens, avx512: each group of 6
// rows is decoded 8 columns at a time straight into the registers the FMAs read, instead of
// into an L2 tile that dot_rows8 reads back (decoding was half of a compressed shard's time).
// A partial token block runs the kernel for the next power of two with zero token rows; rows
// past the last whole group go through a small tile and the one-row kernel. Same bits as
// gemm_variant<Avx512Variant> on the same stream.
bool use_registers(const WeightRows& w, int64_t M) {
  if (w.stream == nullptr || w.stream->registers == nullptr || w.dtype != DType::kF16) return false;
  const RegisterDecode& r = *w.stream->registers;
  return M < gemm_panel::kMinTokens && w.k == r.cols && w.ld == w.k && w.row0 + w.n <= r.rows;
}

int token_stride(int mb) { return mb <= 1 ? 1 : mb <= 4 ? 4 : 8; }

// Whether a decoder uses AVX512-FP16 instructions (and so needs the kernel compiled for them).
template <class Dec>
constexpr bool uses_fp16() {
  if constexpr (requires { Dec::kFp16; }) {
    return Dec::kFp16;
  } else {
    return false;
  }
}

template <class Dec>
void rows_registers(int stride, const float* xp, int64_t K, const Dec& group, float* out) {
#if SG_HAVE_AVX512FP16
  if constexpr (uses_fp16<Dec>()) {
    switch (stride) {
      case 1: return avx512::dot_rows_registers_fp16<1, Dec>(xp, K, group, out);
      case 4: return avx512::dot_rows_registers_fp16<4, Dec>(xp, K, group, out);
      default: return avx512::dot_rows_registers_fp16<8, Dec>(xp, K, group, out);
    }
  }
#endif
  switch (stride) {
    case 1: avx512::dot_rows_registers<1, Dec>(xp, K, group, out); break;
    case 4: avx512::dot_rows_registers<4, Dec>(xp, K, group, out); break;
    default: avx512::dot_rows_registers<8, Dec>(xp, K, group, out); break;
  }
}

template <class Dec>
void gemm_registers(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                    float* y, int64_t ldy) {
  const RegisterDecode& reg = *w.stream->registers;
  const int64_t N = w.n, K = w.k;
  const int64_t k8 = K / kLanes;
  const int64_t mblocks = (M + kTokenBlock - 1) / kTokenBlock;
  const int64_t block_floats = k8 * kTokenBlock * kLanes;
  AlignedFloats packed(static_cast<size_t>(mblocks * block_floats));  // 32-byte chunks on whole lines
  for (int64_t b = 0; b < mblocks; ++b) {
    const int mb = static_cast<int>(std::min<int64_t>(kTokenBlock, M - b * kTokenBlock));
    pack_tokens(x, ldx, b * kTokenBlock, mb, K, packed.data() + b * block_floats, token_stride(mb));
  }
  constexpr int kRows = regdec::kRows;
  const int64_t groups = N / kRows;
  // Work items: groups of 6 rows, in runs of 8 groups per parallel range; the rows past the
  // last group are one more item.
  constexpr int64_t kGroupsPerItem = 8;
  const int64_t items = (groups + kGroupsPerItem - 1) / kGroupsPerItem + (N % kRows != 0 ? 1 : 0);
  const bool small = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) <
                     static_cast<double>(kParallelMinWork);
  auto store = [&](int64_t n, int rows, int64_t m0, int mb, const float* vals) {
    for (int r = 0; r < rows; ++r) {
      const float b = bias != nullptr ? bias[n + r] : 0.0f;
      for (int t = 0; t < mb; ++t) y[(m0 + t) * ldy + n + r] = vals[r * kTokenBlock + t] + b;
    }
  };
  parallel_for(items, small ? items : 1, [&](int64_t i0, int64_t i1) {
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t g0 = item * kGroupsPerItem;
      if (g0 >= groups) {
        // The last rows: decoded into a tile, one row at a time through the one-row kernel.
        const int64_t n0 = groups * kRows;
        std::vector<uint16_t> tile(static_cast<size_t>((N - n0) * K));
        w.stream->decode((w.row0 + n0) * K, (N - n0) * K, tile.data());
        for (int64_t mbk = 0; mbk < mblocks; ++mbk) {
          const int mb = static_cast<int>(std::min<int64_t>(kTokenBlock, M - mbk * kTokenBlock));
          const float* xp = packed.data() + mbk * block_floats;
          for (int64_t n = n0; n < N; ++n) {
            float out[kTokenBlock];
            dot_dispatch<Avx512Variant>(token_stride(mb), xp, K, tile.data() + (n - n0) * K, out);
            float vals[kTokenBlock * kRows];
            for (int t = 0; t < mb; ++t) vals[t] = out[t];
            store(n, 1, mbk * kTokenBlock, mb, vals);
          }
        }
        continue;
      }
      const int64_t g1 = std::min(groups, g0 + kGroupsPerItem);
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t n = g * kRows;
        // Once for every token block (9-15 tokens: two); per-block 4-bit tables are computed
        // again by each kernel call, a 512-column chunk at a time (ShiftScale4::prepare).
        const Dec group(reg, w.row0 + n);
        for (int64_t mbk = 0; mbk < mblocks; ++mbk) {
          const int mb = static_cast<int>(std::min<int64_t>(kTokenBlock, M - mbk * kTokenBlock));
          float vals[kTokenBlock * kRows];
          rows_registers<Dec>(token_stride(mb), packed.data() + mbk * block_floats, K, group, vals);
          store(n, kRows, mbk * kTokenBlock, mb, vals);
        }
      }
    }
  });
}

// The decoder class for a RegisterDecode: every choice that selects instructions is a
// template parameter of the decoder, picked here once per call. 4-bit codes go through tables
// (ShiftScale4), 8-bit ones are decoded value by value (ShiftScale8).
template <template <bool, regdec::Offset, bool> class Dec, bool Signed, bool Blocked>
void gemm_shift_scale(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                      float* y, int64_t ldy) {
  const RegisterDecode& reg = *w.stream->registers;
  using regdec::Offset;
  if (reg.offset.empty()) {
    return gemm_registers<Dec<Signed, Offset::kNone, Blocked>>(x, M, ldx, w, bias, y, ldy);
  }
  if (reg.offset_wider) {
    return gemm_registers<Dec<Signed, Offset::kWider, Blocked>>(x, M, ldx, w, bias, y, ldy);
  }
  gemm_registers<Dec<Signed, Offset::kRounded, Blocked>>(x, M, ldx, w, bias, y, ldy);
}

// 8-bit codes: with fp16 arithmetic at the avx512fp16 level where the form allows it (one
// parameter per row, no offset or an fp16 one), else in fp32.
template <bool Signed, bool Blocked>
void gemm_shift_scale8(bool fp16, const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                       float* y, int64_t ldy) {
  const RegisterDecode& reg = *w.stream->registers;
#if SG_HAVE_AVX512FP16
  if (fp16 && !Blocked && !reg.offset_wider) {
    using regdec::Offset;
    if (reg.offset.empty()) {
      return gemm_registers<regdec::ShiftScale8Fp16<Signed, Offset::kNone>>(x, M, ldx, w, bias, y, ldy);
    }
    return gemm_registers<regdec::ShiftScale8Fp16<Signed, Offset::kRounded>>(x, M, ldx, w, bias, y, ldy);
  }
#else
  (void)fp16;
#endif
  // One scale per row, no offset, every product a normal fp16 number (decided when the stream
  // was made): the fp16 rounding by Veltkamp's split.
  if (!Blocked && reg.split_rounding) {
    return gemm_registers<regdec::ShiftScale8Split<Signed>>(x, M, ldx, w, bias, y, ldy);
  }
  gemm_shift_scale<regdec::ShiftScale8, Signed, Blocked>(x, M, ldx, w, bias, y, ldy);
}

template <bool Blocked>
void gemm_registers_blocked(bool fp16, const float* x, int64_t M, int64_t ldx, const WeightRows& w,
                            const float* bias, float* y, int64_t ldy) {
  const RegisterDecode& reg = *w.stream->registers;
  if (reg.kind == RegisterDecode::Kind::kLut4) {
    return gemm_registers<regdec::Lut4<Blocked>>(x, M, ldx, w, bias, y, ldy);
  }
  switch (reg.codes_dtype) {
    case DType::kI8: return gemm_shift_scale8<true, Blocked>(fp16, x, M, ldx, w, bias, y, ldy);
    case DType::kU8: return gemm_shift_scale8<false, Blocked>(fp16, x, M, ldx, w, bias, y, ldy);
    case DType::kI4: return gemm_shift_scale<regdec::ShiftScale4, true, Blocked>(x, M, ldx, w, bias, y, ldy);
    default: return gemm_shift_scale<regdec::ShiftScale4, false, Blocked>(x, M, ldx, w, bias, y, ldy);
  }
}

void gemm_registers_any(CpuLevel level, const float* x, int64_t M, int64_t ldx, const WeightRows& w,
                        const float* bias, float* y, int64_t ldy) {
  const RegisterDecode& reg = *w.stream->registers;
  const bool fp16 = level >= CpuLevel::kAvx512Fp16;
  if (reg.col_block != reg.cols) return gemm_registers_blocked<true>(fp16, x, M, ldx, w, bias, y, ldy);
  gemm_registers_blocked<false>(fp16, x, M, ldx, w, bias, y, ldy);
}
#endif

}  // namespace

const char* gemm_x_wt_variant_name(CpuLevel level) {
#if SG_GEMM_X86
  if (level >= CpuLevel::kAvx512) return "gemm_x_wt_8x6__avx512f";
  if (level == CpuLevel::kAvx2) return "gemm_x_wt_8x1__avx2_fma_f16c";
#else
  (void)level;
#endif
  return "gemm_x_wt_8x1__scalar";
}

const char* gemm_x_wt_registers_variant_name(CpuLevel level) {
  if (level >= CpuLevel::kAvx512Fp16) return "gemm_x_wt_8x6_regdecode__avx512fp16";
  if (level >= CpuLevel::kAvx512) return "gemm_x_wt_8x6_regdecode__avx512f";
  return nullptr;
}

void gemm_x_wt_at(CpuLevel level, const float* x, int64_t M, int64_t ldx, const WeightRows& w,
                  const float* bias, float* y, int64_t ldy) {
  if (M <= 0 || w.n <= 0) return;
  if (w.k <= 0) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < w.n; ++n) y[m * ldy + n] = bias != nullptr ? bias[n] : 0.0f;
    }
    return;
  }
#if SG_GEMM_X86
  if (level >= CpuLevel::kAvx512) {
    // Many tokens: widen each weight once into a panel instead of once per 8 tokens. Same
    // bits as the skinny kernel (gemm_panel.h), so the switch point is a speed choice only.
    if (M >= gemm_panel::kMinTokens) return gemm_panel::gemm(x, M, ldx, w, bias, y, ldy);
    if (use_registers(w, M)) return gemm_registers_any(level, x, M, ldx, w, bias, y, ldy);
    return gemm_variant<Avx512Variant>(x, M, ldx, w, bias, y, ldy);
  }
  if (level == CpuLevel::kAvx2) return gemm_variant<Avx2Variant>(x, M, ldx, w, bias, y, ldy);
#else
  (void)level;
#endif
  gemm_variant<ScalarVariant>(x, M, ldx, w, bias, y, ldy);
}

void gemm_x_wt(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
               float* y, int64_t ldy) {
  gemm_x_wt_at(cpu_level(), x, M, ldx, w, bias, y, ldy);
}

void gemm_x_wt_f16io(const uint16_t* x, int64_t M, int64_t ldx, const WeightRows& w,
                     const float* bias, uint16_t* y, int64_t ldy) {
  if (M <= 0 || w.n <= 0) return;
#if SG_GEMM_X86
  if (cpu_level() >= CpuLevel::kAvx512 && M >= gemm_panel::kMinTokens && w.k > 0) {
    return gemm_panel::gemm_f16io(x, M, ldx, w, bias, y, ldy);
  }
#endif
  // Every element of both is written before it is read: no zero-fill (this is the path of
  // every 8-token linear).
  const int64_t K = w.k, N = w.n;
  AlignedFloats x32(static_cast<size_t>(M * K)), y32(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) f16_to_f32_span(x + m * ldx, x32.data() + m * K, static_cast<size_t>(K));
  gemm_x_wt(x32.data(), M, K, w, bias, y32.data(), N);
  for (int64_t m = 0; m < M; ++m) f32_to_f16_span(y32.data() + m * N, y + m * ldy, static_cast<size_t>(N));
}

Result<WeightOperand> WeightOperand::get(OpContext& ctx, std::string_view name) {
  WeightOperand w;
  SG_ASSIGN_OR_RETURN(std::optional<StreamedWeight> stream, ctx.get_streamed(name));
  if (stream.has_value()) {
    w.shape_ = stream->shape;
    w.stream_ = std::make_shared<const StreamedWeight>(std::move(stream).value());
    return w;
  }
  SG_ASSIGN_OR_RETURN(Tensor t, ctx.get(name));
  return of(std::move(t));
}

WeightOperand WeightOperand::of(Tensor t) {
  WeightOperand w;
  w.shape_ = t.shape();
  w.tensor_ = std::move(t);
  return w;
}

Result<WeightRows> WeightOperand::rows() {
  SG_CHECK(!shape_.empty(), ErrorCode::kShape, "weight must have rank >= 1, got a scalar");
  WeightRows r;
  r.n = shape_[0];
  r.k = r.n > 0 ? numel(shape_) / r.n : 0;
  r.ld = r.k;
  if (stream_ != nullptr) {
    r.dtype = stream_->dtype;
    r.stream = stream_.get();
    return r;
  }
  if (tensor_.dtype() == DType::kF16 || tensor_.dtype() == DType::kF32) {
    r.dtype = tensor_.dtype();
    r.data = tensor_.raw();
    return r;
  }
  if (!holder_.defined()) {
    SG_ASSIGN_OR_RETURN(holder_, to_f32(tensor_));
  }
  r.dtype = DType::kF32;
  r.data = holder_.raw();
  return r;
}

}  // namespace sg
