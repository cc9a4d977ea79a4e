// gemm_panel::gemm: the many-token GEMM of the avx512 level (see gemm_panel.h).
//
// The activations are packed once per call ([K block][token block][chunk][token][8], zero past
// K, so the last partial 8-k chunk needs no special case), except for 16 weight rows or fewer
// (Plan::direct), where they are read in place and only the partial chunk is copied. Then, per thread, over its row
// blocks of kRowBlock weight rows:
//   decode (streamed weights) the block's rows into a tile, once;
//   for each chunk of up to kTokenChunk tokens (bounds the partial sums kept in memory):
//     for each K block of kKBlock 8-k chunks:
//       widen and pack the block's slice of those rows into an fp32 panel (128 KiB, in L2);
//       for each group of kR row pairs (its K-block slice, 16 KiB, stays in L1):
//         for each block of kT tokens (streamed from L2): 24 accumulators over the K block,
//         loaded from and stored to the partial sums, while asking L2 for the activations of
//         the next K block one line per k-chunk step, and for the weight lines of the slice
//         packed next one per 8 steps (SliceLines);
//     the tree reduction, bias, and the store to y.
// Accumulation of each lane runs in k order whatever the blocking, so the bits are those of
// the skinny kernel (avx2::dot_tokens / avx512::dot_rows8 in linear_kernel.cpp).
#include "ops/gemm_panel.h"

#include "ops/aligned_floats.h"

#include "core/parallel.h"
#include "shardgate/half.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SG_PANEL_X86 1
// Compiled for AVX-512F by function attribute only (see linear_kernel.cpp): the file's inline
// functions shared with others stay baseline x86-64.
#define SG_TARGET_PANEL __attribute__((target("avx512f,avx2,fma,f16c")))
#endif

namespace sg::gemm_panel {

#if SG_PANEL_X86
namespace {

constexpr int kLanes = 8;
constexpr int kR = 4;                    // row pairs per register block
constexpr int kT = 6;                    // tokens per register block
constexpr int kGroupRows = 2 * kR;       // weight rows per register block
constexpr int64_t kRowBlock = 64;        // weight rows per panel (a multiple of kGroupRows)
constexpr int64_t kKBlock = 64;          // 8-k chunks per K block (512 k)
constexpr int64_t kTokenChunk = 192;     // a multiple of kT
static_assert(kTokenChunk % kT == 0, "token chunks start on a packed token block");     // tokens whose partial sums are kept at once
constexpr int kPairFloats = 2 * kLanes;  // one zmm: rows n, n+1 × 8 k-lanes
constexpr int kPrefetchChunks = 8;
constexpr int64_t kDirectMaxGroups = 2;  // Plan::direct: up to 16 weight rows
// Below this many multiply-adds a product stays on the calling thread.
constexpr int64_t kParallelMinWork = int64_t{1} << 18;

SG_TARGET_PANEL inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
SG_TARGET_PANEL inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline float widen(float v) { return v; }
inline float widen(uint16_t v) { return f16_to_f32(v); }

// Row `row` (of `rows` valid ones) at k-chunk kb, zero past K and past the block's rows.
template <typename WT>
SG_TARGET_PANEL inline __m256 chunk(const WT* w, int64_t ld, int64_t row, int64_t rows, int64_t kb,
                                    int64_t K) {
  if (row >= rows) return _mm256_setzero_ps();
  const WT* p = w + row * ld + kb * kLanes;
  if ((kb + 1) * kLanes <= K) return load8(p);
  alignas(32) float t[kLanes] = {};
  for (int64_t j = 0; j < K - kb * kLanes; ++j) t[j] = widen(p[j]);
  return _mm256_load_ps(t);
}

// panel[((g · nkb + kb) · kR + r) · 16 + lane]: group g's row pair r at chunk kb0 + kb; lanes
// 0-7 are row g·8 + 2r, lanes 8-15 the next row. A group's chunks are contiguous, so the
// micro-kernel streams kR · 64 bytes per chunk. One K block's slice (128 KiB) is packed just
// before its micro-kernel calls, so it is read from L2. Packing the whole K once per row block
// instead wrote up to 3 MiB (K = 12288) per thread and read it back from memory per token
// chunk; widening the fp16 again per token chunk reads half those bytes. The 512-token layer
// ran at the same speed either way (within the machine's noise), with 1/24 of the buffer.
// Whole: fp16 rows, every group whole and every chunk inside K, so each row pair's two
// 8-value chunks are widened by one instruction into one 64-byte store (half the stores, each
// a full line of the panel); otherwise a chunk at a time, zero past K and past the block's
// rows. A template parameter, not a branch in the loop: with the branch the 512-token layer
// ran 2-4% slower (alternating, four rounds).
template <bool Whole, typename WT>
SG_TARGET_PANEL void pack_panel_as(const WT* w, int64_t ld, int64_t rows, int64_t K, int64_t kb0,
                                   int64_t nkb, int64_t groups, float* panel) {
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t kb = 0; kb < nkb; ++kb) {
      float* d = panel + ((g * nkb + kb) * kR) * kPairFloats;
      for (int r = 0; r < kR; ++r) {
        const int64_t row = g * kGroupRows + 2 * r;
        if constexpr (Whole) {
          const WT* p = w + row * ld + (kb0 + kb) * kLanes;
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + ld));
          _mm512_store_ps(d + r * kPairFloats, _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1)));
        } else {
          _mm256_store_ps(d + r * kPairFloats, chunk(w, ld, row, rows, kb0 + kb, K));
          _mm256_store_ps(d + r * kPairFloats + kLanes, chunk(w, ld, row + 1, rows, kb0 + kb, K));
        }
      }
    }
  }
}

template <typename WT>
SG_TARGET_PANEL void pack_panel(const WT* w, int64_t ld, int64_t rows, int64_t K, int64_t kb0,
                                int64_t nkb, int64_t groups, float* panel) {
  if constexpr (std::is_same_v<WT, uint16_t>) {
    if (groups * kGroupRows <= rows && (kb0 + nkb) * kLanes <= K) {
      return pack_panel_as<true>(w, ld, rows, K, kb0, nkb, groups, panel);
    }
  }
  pack_panel_as<false>(w, ld, rows, K, kb0, nkb, groups, panel);
}

// part[(t · kR + r) · 16 ..] (+)= Σ over nkb chunks of panel pair r × token t's chunk broadcast
// to both halves. Packed: token t's chunk kb is at x + (kb · T + t) · 8 (pack_tokens); direct:
// at x + t · ldx + kb · 8 (x's own rows, for few weight rows: see Plan::direct).
// pf: pf_lines cache lines (at most nkb) asked into L2 for a later call, one per k-chunk step so
// they overlap the FMAs (issued in a burst before the call they stalled it: ~5% of the layer).
template <int T, bool Packed>
SG_TARGET_PANEL void ukernel(const float* pw, int64_t nkb, const float* x, int64_t ldx, float* part,
                             bool load, const float* pf, int64_t pf_lines, const char* const* wl, int nwl) {
  static_assert(kR == 4 && T >= 1 && T <= kT);
  // Four named arrays, not one [4][T]: GCC keeps these in registers (24 zmm + 4 weights + 1).
  __m512 a0[T], a1[T], a2[T], a3[T];
#pragma GCC unroll 6
  for (int t = 0; t < T; ++t) {
    if (load) {
      a0[t] = _mm512_load_ps(part + (t * kR + 0) * kPairFloats);
      a1[t] = _mm512_load_ps(part + (t * kR + 1) * kPairFloats);
      a2[t] = _mm512_load_ps(part + (t * kR + 2) * kPairFloats);
      a3[t] = _mm512_load_ps(part + (t * kR + 3) * kPairFloats);
    } else {
      a0[t] = a1[t] = a2[t] = a3[t] = _mm512_setzero_ps();
    }
  }
  for (int64_t kb = 0; kb < nkb; ++kb) {
    const float* p = pw + kb * kR * kPairFloats;
    const __m512 w0 = _mm512_load_ps(p);
    const __m512 w1 = _mm512_load_ps(p + kPairFloats);
    const __m512 w2 = _mm512_load_ps(p + 2 * kPairFloats);
    const __m512 w3 = _mm512_load_ps(p + 3 * kPairFloats);
    const float* xb = x + kb * (Packed ? T * kLanes : kLanes);
    const int64_t xt = Packed ? kLanes : ldx;
    // The activations come from L2 (each call streams its token block once, the row group's
    // weights stay in L1): asking for them kPrefetchChunks chunks ahead hides that latency.
    // (perf showed the FMAs after each broadcast waiting; 5-10% faster at 512 tokens.)
    if (kb < pf_lines) _mm_prefetch(reinterpret_cast<const char*>(pf + kb * 16), _MM_HINT_T1);
    if ((kb & 7) == 0 && (kb >> 3) < nwl) _mm_prefetch(wl[kb >> 3], _MM_HINT_T1);
    if constexpr (Packed) {
#pragma GCC unroll 3
      for (int l = 0; l < T * kLanes; l += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(xb + kPrefetchChunks * T * kLanes + l), _MM_HINT_T0);
      }
    }
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t) {
      // vbroadcastf64x4: the 8 floats to both 256-bit halves (AVX-512F has no f32x8 form).
      const __m512 xv = _mm512_castpd_ps(
          _mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(xb + t * xt))));
      a0[t] = _mm512_fmadd_ps(w0, xv, a0[t]);
      a1[t] = _mm512_fmadd_ps(w1, xv, a1[t]);
      a2[t] = _mm512_fmadd_ps(w2, xv, a2[t]);
      a3[t] = _mm512_fmadd_ps(w3, xv, a3[t]);
    }
  }
#pragma GCC unroll 6
  for (int t = 0; t < T; ++t) {
    _mm512_store_ps(part + (t * kR + 0) * kPairFloats, a0[t]);
    _mm512_store_ps(part + (t * kR + 1) * kPairFloats, a1[t]);
    _mm512_store_ps(part + (t * kR + 2) * kPairFloats, a2[t]);
    _mm512_store_ps(part + (t * kR + 3) * kPairFloats, a3[t]);
  }
}

template <bool Packed>
SG_TARGET_PANEL void ukernel_tokens(int tokens, const float* pw, int64_t nkb, const float* x, int64_t ldx,
                                    float* part, bool load, const float* pf = nullptr,
                                    int64_t pf_lines = 0, const char* const* wl = nullptr, int nwl = 0) {
  switch (tokens) {
    case 1: return ukernel<1, Packed>(pw, nkb, x, ldx, part, load, pf, pf_lines, wl, nwl);
    case 2: return ukernel<2, Packed>(pw, nkb, x, ldx, part, load, pf, pf_lines, wl, nwl);
    case 3: return ukernel<3, Packed>(pw, nkb, x, ldx, part, load, pf, pf_lines, wl, nwl);
    case 4: return ukernel<4, Packed>(pw, nkb, x, ldx, part, load, pf, pf_lines, wl, nwl);
    case 5: return ukernel<5, Packed>(pw, nkb, x, ldx, part, load, pf, pf_lines, wl, nwl);
    default: return ukernel<6, Packed>(pw, nkb, x, ldx, part, load, pf, pf_lines, wl, nwl);
  }
}

// Tokens [0, ct) of x (rows ldx apart), 8-k chunks [kb0, kb0 + nkb), as consecutive blocks of
// kT tokens, each [nkb][tokens][8], zero past K: one sequential stream per micro-kernel call,
// and the last partial chunk never reads past a row of x.
template <typename XT>
SG_TARGET_PANEL void pack_tokens(const XT* x, int64_t ldx, int64_t ct, int64_t kb0, int64_t nkb,
                                 int64_t K, float* xp) {
  for (int64_t t0 = 0; t0 < ct; t0 += kT) {
    const int64_t tokens = std::min<int64_t>(kT, ct - t0);
    for (int64_t kb = 0; kb < nkb; ++kb) {
      const int64_t k = (kb0 + kb) * kLanes;
      for (int64_t t = 0; t < tokens; ++t) {
        const XT* src = x + (t0 + t) * ldx + k;
        float* d = xp + (t0 * nkb + kb * tokens + t) * kLanes;
        if (k + kLanes <= K) {
          _mm256_store_ps(d, load8(src));
        } else {
          for (int64_t j = 0; j < kLanes; ++j) d[j] = k + j < K ? widen(src[j]) : 0.0f;
        }
      }
    }
  }
}

// (a0+a4) + (a2+a6) + ((a1+a5) + (a3+a7)): the tree of the skinny kernel's hsum8.
SG_TARGET_PANEL inline float hsum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// The 8 sums of 8 rows of 8 lane partials (row i at p + 8·i), each by hsum8's tree, at once:
// an 8×8 transpose gives lane vectors c0..c7 (element i = row i's lane), then
// ((c0+c4) + (c2+c6)) + ((c1+c5) + (c3+c7)) is the same additions in the same order per row.
// (The row-at-a-time hsum8 was 9% of a 512-token MoE run.)
SG_TARGET_PANEL inline __m256 tree8(const float* p) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_load_ps(p + i * kLanes);
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  const __m256 c0 = _mm256_permute2f128_ps(u0, u4, 0x20), c4 = _mm256_permute2f128_ps(u0, u4, 0x31);
  const __m256 c1 = _mm256_permute2f128_ps(u1, u5, 0x20), c5 = _mm256_permute2f128_ps(u1, u5, 0x31);
  const __m256 c2 = _mm256_permute2f128_ps(u2, u6, 0x20), c6 = _mm256_permute2f128_ps(u2, u6, 0x31);
  const __m256 c3 = _mm256_permute2f128_ps(u3, u7, 0x20), c7 = _mm256_permute2f128_ps(u3, u7, 0x31);
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c4), _mm256_add_ps(c2, c6)),
                       _mm256_add_ps(_mm256_add_ps(c1, c5), _mm256_add_ps(c3, c7)));
}

struct Plan {
  const float* xp;  // all tokens packed: K block kb0 at xp + kb0 · M · 8 (pack_tokens)
  // Few weight rows (one or two row groups): the activations are read where they are instead,
  // once per row group. Packing them costs a write and a read of all of x for work of only
  // 2 · rows FLOP per activation: the 16-row MoE router ran at 0.25 of peak packed.
  bool direct;
  const float* x;
  int64_t ldx;
  int64_t M;
  const WeightRows* w;
  const float* bias;
  void* y;  // float, or fp16 bits (YT of run_blocks)
  int64_t ldy;
  int64_t N, K, K8, block_rows, groups, chunk_tokens;
};

// 8 sums to y: fp32, or rounded to fp16 (to nearest even, as the executor's fp16 storage does).
SG_TARGET_PANEL inline void store8(float* y, __m256 v) { _mm256_storeu_ps(y, v); }
SG_TARGET_PANEL inline void store8(uint16_t* y, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void store1(float* y, float v) { *y = v; }
inline void store1(uint16_t* y, float v) { *y = f32_to_f16(v); }

// The weight lines of a panel slice (rows × chunks [kb0, kb0 + nkb) of rows ld apart), asked
// into L2 a few at a time while the slice before it is multiplied: pack_panel then reads them
// from L2 instead of waiting on memory row by row (each row's 1 KiB of a slice sits in its own
// 4 KiB page, where the hardware prefetcher stops).
template <typename WT>
struct SliceLines {
  static constexpr int kMaxAsk = 8;
  const WT* base = nullptr;  // null: nothing to ask for
  int64_t ld = 0, rows = 0, kb0 = 0, per_row = 0;
  int64_t row = 0, col = 0;  // the next line: row `row`, line `col` of its slice
  SliceLines() = default;
  SliceLines(const WT* b, int64_t ld_, int64_t rows_, int64_t kb0_, int64_t nkb)
      : base(b), ld(ld_), rows(rows_), kb0(kb0_), per_row((nkb * kLanes * static_cast<int64_t>(sizeof(WT)) + 63) / 64) {}
  int64_t lines() const { return base != nullptr ? rows * per_row : 0; }
  // The next n (at most kMaxAsk) lines' addresses into out, for the micro-kernel to ask for
  // between its FMAs; how many there were. Stepped, not divided: this runs at every call.
  int take(int64_t n, const char** out) {
    int k = 0;
    for (; k < std::min<int64_t>(n, kMaxAsk) && base != nullptr && row < rows; ++k) {
      out[k] = reinterpret_cast<const char*>(base + row * ld + kb0 * kLanes + col * (64 / static_cast<int64_t>(sizeof(WT))));
      if (++col == per_row) col = 0, ++row;
    }
    return k;
  }
};

// Row blocks [b0, b1) of the plan: a function of its own (not the parallel_for lambda) so it
// carries the AVX-512 target attribute.
template <typename WT, typename YT>
SG_TARGET_PANEL void run_blocks(const Plan& pl, int64_t b0, int64_t b1) {
  const float* xp_all = pl.xp;
  const float* x = pl.x;
  const int64_t ldx = pl.ldx;
  const int64_t full8 = pl.K / kLanes;
  const int64_t M = pl.M, ldy = pl.ldy, N = pl.N, K = pl.K;
  const int64_t K8 = pl.K8, block_rows = pl.block_rows, groups = pl.groups;
  const int64_t chunk_tokens = pl.chunk_tokens;
  const WeightRows& w = *pl.w;
  const float* bias = pl.bias;
  YT* y = static_cast<YT*>(pl.y);
  {
    AlignedFloats panel(static_cast<size_t>(groups * std::min(K8, kKBlock) * kR * kPairFloats));
    AlignedFloats part(static_cast<size_t>(groups * chunk_tokens * kR * kPairFloats));
    std::vector<WT> tile(w.stream != nullptr ? static_cast<size_t>(block_rows * K) : 0);
    // Direct mode: the last, partial 8-k chunk of each token, zero-padded (never read past x).
    AlignedFloats xtail(pl.direct && full8 < K8 ? static_cast<size_t>(chunk_tokens * kLanes) : 0);
    for (int64_t nb = b0; nb < b1; ++nb) {
      const int64_t n0 = nb * block_rows;
      const int64_t rows = std::min(N, n0 + block_rows) - n0;
      const WT* src = nullptr;
      int64_t ld = w.ld;
      if (w.stream != nullptr) {
        w.stream->decode((w.row0 + n0) * K, rows * K, tile.data());
        src = tile.data();
        ld = K;
      } else {
        src = static_cast<const WT*>(w.data) + n0 * w.ld;
      }
      for (int64_t c0 = 0; c0 < M; c0 += chunk_tokens) {
        const int64_t ct = std::min(chunk_tokens, M - c0);
        auto part_at = [&](int64_t g, int64_t t) {
          return part.data() + ((g * chunk_tokens + t) * kR) * kPairFloats;
        };
        if (pl.direct) {
          if (full8 < K8) {
            for (int64_t t = 0; t < ct; ++t) {
              for (int64_t j = 0; j < kLanes; ++j) {
                const int64_t k = full8 * kLanes + j;
                xtail.data()[t * kLanes + j] = k < K ? x[(c0 + t) * ldx + k] : 0.0f;
              }
            }
          }
          for (int64_t kb0 = 0; kb0 < K8; kb0 += kKBlock) {
            const int64_t nkb = std::min(kKBlock, K8 - kb0);
            const int64_t nfull = std::min(nkb, full8 - kb0);  // the block's whole chunks
            pack_panel(src, ld, rows, K, kb0, nkb, groups, panel.data());
            for (int64_t g = 0; g < groups; ++g) {
              const float* pw = panel.data() + (g * nkb * kR) * kPairFloats;
              for (int64_t t0 = 0; t0 < ct; t0 += kT) {
                const int tokens = static_cast<int>(std::min<int64_t>(kT, ct - t0));
                if (nfull > 0) {
                  ukernel_tokens<false>(tokens, pw, nfull, x + (c0 + t0) * ldx + kb0 * kLanes, ldx,
                                        part_at(g, t0), kb0 > 0);
                }
                if (nfull < nkb) {
                  ukernel_tokens<false>(tokens, pw + nfull * kR * kPairFloats, 1, xtail.data() + t0 * kLanes,
                                        kLanes, part_at(g, t0), kb0 + nfull > 0);
                }
              }
            }
          }
        }
        for (int64_t kb0 = 0; !pl.direct && kb0 < K8; kb0 += kKBlock) {
          const int64_t nkb = std::min(kKBlock, K8 - kb0);
          const float* xp = xp_all + kb0 * M * kLanes + c0 * nkb * kLanes;
          // What the next slice of this thread will read, asked into L2 a little at each
          // micro-kernel call of this one: this row block's next K block, or its first again
          // for the next token chunk, or (weights only) the next row block's first.
          //  - its activations: otherwise the first row group of every K block streams them
          //    from L3 at the FMA rate;
          //  - its weight lines (SliceLines; mapped weights only: a streamed row block is
          //    decoded into the tile after this one): pack_panel otherwise waits on memory.
          const bool next_k = kb0 + kKBlock < K8;
          const int64_t kbn = next_k ? kb0 + kKBlock : 0;
          const int64_t nkbn = std::min(kKBlock, K8 - kbn);
          const int64_t cn = next_k ? c0 : c0 + ct;  // the next slice's token chunk (M: none)
          const float* next = nullptr;
          int64_t next_lines = 0;
          SliceLines<WT> wnext;
          if (cn < M) {
            const int64_t ctn = std::min(chunk_tokens, M - cn);
            next = xp_all + kbn * M * kLanes + cn * nkbn * kLanes;
            next_lines = ctn * nkbn * kLanes / 16;
            wnext = SliceLines<WT>(src, ld, rows, kbn, nkbn);
          } else if (nb + 1 < b1 && w.stream == nullptr) {
            const int64_t n1 = n0 + block_rows;
            wnext = SliceLines<WT>(static_cast<const WT*>(w.data) + n1 * w.ld, w.ld, std::min(N, n1 + block_rows) - n1, 0, nkbn);
          }
          pack_panel(src, ld, rows, K, kb0, nkb, groups, panel.data());
          const int64_t calls = groups * ((ct + kT - 1) / kT);
          const int64_t per_call = (next_lines + calls - 1) / calls;
          int64_t line = 0;
          const int64_t w_per_call = (wnext.lines() + calls - 1) / calls;
          for (int64_t g = 0; g < groups; ++g) {
            const float* pw = panel.data() + (g * nkb * kR) * kPairFloats;
            for (int64_t t0 = 0; t0 < ct; t0 += kT) {
              const int tokens = static_cast<int>(std::min<int64_t>(kT, ct - t0));
              // Lines beyond one per k-chunk step (never at these sizes) are asked for here.
              const int64_t e = std::min(next_lines, line + per_call);
              for (; line + nkb < e; ++line) {
                _mm_prefetch(reinterpret_cast<const char*>(next + line * 16), _MM_HINT_T1);
              }
              const int64_t pf_lines = std::max<int64_t>(0, e - line);
              const char* wl[SliceLines<WT>::kMaxAsk];
              const int nwl = wnext.take(std::min(w_per_call, (nkb + 7) / 8), wl);
              ukernel_tokens<true>(tokens, pw, nkb, xp + t0 * nkb * kLanes, kLanes, part_at(g, t0), kb0 > 0,
                                   next + line * 16, pf_lines, wl, nwl);
              line += pf_lines;
            }
          }
        }
        for (int64_t g = 0; g < groups; ++g) {
          const int64_t g0 = g * kGroupRows;
          for (int64_t t = 0; t < ct; ++t) {
            // The group's 8 rows × 8 lane partials of token t, row-major (pair r's halves).
            const float* pp = part_at(g, t);
            YT* yrow = y + (c0 + t) * ldy + n0 + g0;
            if (rows - g0 >= kGroupRows) {
              const __m256 sums = tree8(pp);
              store8(yrow, bias != nullptr ? _mm256_add_ps(sums, _mm256_loadu_ps(bias + n0 + g0)) : sums);
              continue;
            }
            for (int64_t i = 0; i < rows - g0; ++i) {
              store1(yrow + i, hsum8(_mm256_load_ps(pp + i * kLanes)) + (bias != nullptr ? bias[n0 + g0 + i] : 0.0f));
            }
          }
        }
      }
    }
  }
}

// x and y of type XT and YT: float, or fp16 bits (gemm_f16io).
template <typename WT, typename XT, typename YT>
void gemm_typed(const XT* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                YT* y, int64_t ldy) {
  Plan pl{nullptr, false, nullptr, ldx, M, &w, bias, y, ldy, w.n, w.k, 0, 0, 0, 0};
  pl.K8 = (pl.K + kLanes - 1) / kLanes;
  pl.block_rows = std::min<int64_t>(kRowBlock, (pl.N + kGroupRows - 1) / kGroupRows * kGroupRows);
  pl.groups = pl.block_rows / kGroupRows;
  pl.chunk_tokens = std::min<int64_t>(M, kTokenChunk);
  pl.direct = pl.groups <= kDirectMaxGroups;
  // The direct path reads fp32 activations in place: fp16 ones are widened first (a product
  // with at most 16 weight rows: the copy is small next to what packing would cost).
  AlignedFloats x32;
  if constexpr (std::is_same_v<XT, float>) {
    pl.x = x;
  } else if (pl.direct) {
    x32.grow(static_cast<size_t>(M * pl.K));
    for (int64_t m = 0; m < M; ++m) f16_to_f32_span(x + m * ldx, x32.data() + m * pl.K, static_cast<size_t>(pl.K));
    pl.x = x32.data();
    pl.ldx = pl.K;
  }
  const int64_t nblocks = (pl.N + pl.block_rows - 1) / pl.block_rows;
  const bool small = static_cast<double>(M) * static_cast<double>(pl.N) * static_cast<double>(pl.K) <
                     static_cast<double>(kParallelMinWork);
  // The activations are packed once per call (every row block reads them): K block by K block,
  // kT tokens at a time, as the micro-kernel streams them.
  const int64_t K8 = pl.K8;
  AlignedFloats xp(pl.direct ? 0 : static_cast<size_t>(M * K8 * kLanes));
  const int64_t kblocks = (K8 + kKBlock - 1) / kKBlock;
  if (!pl.direct) parallel_for(kblocks, small ? kblocks : 1, [&](int64_t k0, int64_t k1) {
    for (int64_t kc = k0; kc < k1; ++kc) {
      const int64_t kb0 = kc * kKBlock;
      pack_tokens(x, ldx, M, kb0, std::min(kKBlock, K8 - kb0), pl.K, xp.data() + kb0 * M * kLanes);
    }
  });
  pl.xp = xp.data();
  parallel_for(nblocks, small ? nblocks : 1,
               [&pl](int64_t b0, int64_t b1) { run_blocks<WT, YT>(pl, b0, b1); });
}

}  // namespace

void gemm(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias, float* y,
          int64_t ldy) {
  if (w.dtype == DType::kF16) {
    gemm_typed<uint16_t>(x, M, ldx, w, bias, y, ldy);
  } else {
    gemm_typed<float>(x, M, ldx, w, bias, y, ldy);
  }
}

void gemm_f16io(const uint16_t* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                uint16_t* y, int64_t ldy) {
  if (w.dtype == DType::kF16) {
    gemm_typed<uint16_t>(x, M, ldx, w, bias, y, ldy);
  } else {
    gemm_typed<float>(x, M, ldx, w, bias, y, ldy);
  }
}

#else

void gemm(const float*, int64_t, int64_t, const WeightRows&, const float*, float*, int64_t) {
  // Never called: cpu_level() is kScalar on a non-x86 build.
}
void gemm_f16io(const uint16_t*, int64_t, int64_t, const WeightRows&, const float*, uint16_t*, int64_t) {}

#endif

}  // namespace sg::gemm_panel
