// Weight decoders for the 8-token product's registers (RegisterDecode, op_context.h): each
// yields, for a group of 6 weight rows, one zmm per row pair holding rows (2p, 2p + 1) × the
// same 8 k-lanes (low half, high half): the layout linear_kernel.cpp's avx512 kernel widens
// fp16 rows into. The values are the fp16 bits the range decoder of the same format writes
// (constexpr.cpp), widened to fp32, so the product is the same bits as decoding into a tile
// first: the codes are widened exactly, scaled and offset in fp32 in the same order, rounded to
// fp16 where ShiftScale::apply rounds (vcvtps2ph rounds to nearest even like f32_to_f16), and
// palette entries are the widened fp16 entries themselves.
//
// Only for x86 with AVX-512F, chosen at run time (cpu_level() == kAvx512) by the caller.
#pragma once

#include "shardgate/op_context.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SG_REGDEC_TARGET __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))

namespace sg::regdec {

constexpr int kRows = 6;   // rows per group: 3 pairs
constexpr int kPairs = 3;

// Rows 2p and 2p + 1 of the group in one zmm: a in the low 8 lanes, b in the high 8.
SG_REGDEC_TARGET inline __m512 halves(float a, float b) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(a), _mm512_set1_ps(b));
}

SG_REGDEC_TARGET inline __m512 round_f16(__m512 v) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// The first parameter of row r: row r / row_block of the parameters, without a division for
// the usual blockings (one parameter row per weight row, or one for all), since every row
// group of a call asks for six.
inline int64_t param_row_start(const RegisterDecode& d, int64_t r) {
  const int64_t pr = d.row_block == 1 ? r : d.row_block >= d.rows ? 0 : r / d.row_block;
  return pr * d.param_cols;
}

// Where row r's codes start (rows are a multiple of 8 codes long, so 4-bit rows start on a byte).
inline const std::byte* row_codes(const RegisterDecode& d, int64_t r, int bits) {
  return d.codes + r * d.cols * bits / 8;
}

// The codes 8 steps ahead of column k of a row: the kernel reads 6 rows at a time, 8 codes of
// each per step, and the hardware prefetcher alone left it waiting for memory.
constexpr int64_t kPrefetchBytes = 256;
SG_REGDEC_TARGET inline void prefetch(const std::byte* row, int64_t k, int bits) {
  _mm_prefetch(reinterpret_cast<const char*>(row + k * bits / 8 + kPrefetchBytes), _MM_HINT_T0);
}

// How a shift-scale weight's codes are offset before scaling (ShiftScale::apply in
// constexpr.cpp): not at all, by an offset rounded to fp16 with the difference rounded to fp16
// too, or (fp32 offset with a fp16 scale) in fp32.
enum class Offset { kNone, kRounded, kWider };

// 8 packed 4-bit codes of row a then 8 of row b, as 16 bytes in element order (element 2i in
// the low nibble of byte i), sign-extended from 4 bits when the codes are signed.
template <bool Signed>
SG_REGDEC_TARGET inline __m128i nibbles(const std::byte* a, const std::byte* b) {
  uint32_t lo, hi;
  std::memcpy(&lo, a, sizeof lo);
  std::memcpy(&hi, b, sizeof hi);
  const __m128i packed = _mm_cvtsi64_si128(static_cast<long long>((uint64_t{hi} << 32) | lo));
  const __m128i nibble = _mm_set1_epi8(0x0f);
  __m128i codes = _mm_unpacklo_epi8(_mm_and_si128(packed, nibble),
                                    _mm_and_si128(_mm_srli_epi16(packed, 4), nibble));
  if constexpr (Signed) {
    const __m128i eight = _mm_set1_epi8(8);
    codes = _mm_sub_epi8(_mm_xor_si128(codes, eight), eight);
  }
  return codes;
}

// The same 16 codes, each in the high nibble of its byte: the byte is the code times 16, as a
// signed byte for signed codes (no sign extension step) or an unsigned one. The caller divides
// the scale by 16 instead, which is exact (a power of two on a fp16 value held in fp32), so
// (scale / 16) · (16 · code) is the same fp32 product as scale · code.
SG_REGDEC_TARGET inline __m128i nibbles_x16(const std::byte* a, const std::byte* b) {
  uint32_t lo, hi;
  std::memcpy(&lo, a, sizeof lo);
  std::memcpy(&hi, b, sizeof hi);
  const __m128i packed = _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(lo)), static_cast<int>(hi), 1);
  const __m128i high = _mm_set1_epi8(static_cast<char>(0xf0));
  return _mm_unpacklo_epi8(_mm_and_si128(_mm_slli_epi16(packed, 4), high), _mm_and_si128(packed, high));
}

// Integer codes (8 or 4 bits, signed or not) scaled per parameter block, with an offset or
// none: constexpr_blockwise_shift_scale. Everything that selects an instruction is a template
// parameter, so the kernel's loop holds no branch and its accumulators stay in registers.
//
// Blocked: the parameters change along a row every 2^block_shift columns and are looked up
// at every step; otherwise one parameter serves a whole row and is loaded once. (The kernel
// must not branch to reload them: GCC then keeps its accumulators on the stack.)
template <int Bits, bool Signed, Offset Off, bool Blocked>
class ShiftScale {
 public:
  SG_REGDEC_TARGET ShiftScale(const RegisterDecode& d, int64_t row)
      : scale_tab_(d.scale), offset_tab_(d.offset), shift_(d.block_shift) {
    for (int i = 0; i < kRows; ++i) {
      const int64_t r = row + i;
      rows_[i] = row_codes(d, r, Bits);
      param_[i] = param_row_start(d, r);
    }
    if constexpr (!Blocked) {
      for (int p = 0; p < kPairs; ++p) params(p, 0, scale_[p], offs_[p]);
    }
  }

  // Rows 2p, 2p + 1 at columns k .. k + 7.
  SG_REGDEC_TARGET __m512 pair(int p, int64_t k) const {
    __m512 scale, offs;
    if constexpr (Blocked) {
      params(p, k >> shift_, scale, offs);
    } else {
      scale = scale_[p];
      offs = offs_[p];
    }
    const std::byte* ra = rows_[2 * p];
    const std::byte* rb = rows_[2 * p + 1];
    prefetch(ra, k, Bits);
    prefetch(rb, k, Bits);
    __m128i codes;
    if constexpr (Bits == 8) {
      codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(ra + k));
      codes = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(codes), reinterpret_cast<const double*>(rb + k)));
    } else if constexpr (kTimes16) {
      codes = nibbles_x16(ra + k / 2, rb + k / 2);
    } else {
      codes = nibbles<Signed>(ra + k / 2, rb + k / 2);
    }
    const __m512i wide = Signed ? _mm512_cvtepi8_epi32(codes) : _mm512_cvtepu8_epi32(codes);
    const __m512 x = _mm512_cvtepi32_ps(wide);
    __m512 v;
    if constexpr (Off == Offset::kNone) {
      v = _mm512_mul_ps(scale, x);
    } else if constexpr (Off == Offset::kWider) {
      v = _mm512_mul_ps(scale, _mm512_sub_ps(x, offs));
    } else {
      v = _mm512_mul_ps(scale, round_f16(_mm512_sub_ps(x, offs)));
    }
    return round_f16(v);
  }

 private:
  // 4-bit codes without an offset are read as code · 16 (nibbles_x16). With an offset the
  // difference code - offset is rounded to fp16 on the way, which scaling could change near
  // fp16's smallest values, so those keep the plain codes.
  static constexpr bool kTimes16 = Bits == 4 && Off == Offset::kNone;

  // The scale (and offset) of pair p's two rows in parameter column q.
  SG_REGDEC_TARGET void params(int p, int64_t q, __m512& scale, __m512& offs) const {
    const int64_t ia = param_[2 * p] + q, ib = param_[2 * p + 1] + q;
    scale = halves(scale_tab_[ia], scale_tab_[ib]);
    if constexpr (kTimes16) scale = _mm512_mul_ps(scale, _mm512_set1_ps(1.0f / 16));
    if constexpr (Off != Offset::kNone) {
      offs = halves(offset_tab_[ia], offset_tab_[ib]);
    } else {
      offs = _mm512_setzero_ps();
    }
  }

  const float* scale_tab_;
  const float* offset_tab_;
  int shift_;
  const std::byte* rows_[kRows];
  int64_t param_[kRows];
  __m512 scale_[kPairs];
  __m512 offs_[kPairs];
};

// 4-bit indices into 16-entry fp16 palettes: constexpr_lut_to_dense's scalar form. One
// two-table permute looks up a row pair (row b's indices offset by 16 select the second table).
// Blocked as for ShiftScale: the palette changes along a row every 2^block_shift columns.
template <bool Blocked>
class Lut4 {
 public:
  SG_REGDEC_TARGET Lut4(const RegisterDecode& d, int64_t row) : shift_(d.block_shift) {
    for (int i = 0; i < kRows; ++i) {
      const int64_t r = row + i;
      rows_[i] = row_codes(d, r, 4);
      table_[i] = d.tables + param_row_start(d, r) * 16;
    }
  }

  SG_REGDEC_TARGET __m512 pair(int p, int64_t k) const {
    prefetch(rows_[2 * p], k, 4);
    prefetch(rows_[2 * p + 1], k, 4);
    const __m128i codes = nibbles<false>(rows_[2 * p] + k / 2, rows_[2 * p + 1] + k / 2);
    const __m512i second = _mm512_set_epi32(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i idx = _mm512_or_si512(_mm512_cvtepu8_epi32(codes), second);
    const int64_t at = Blocked ? (k >> shift_) * 16 : 0;
    return _mm512_permutex2var_ps(_mm512_loadu_ps(table_[2 * p] + at), idx, _mm512_loadu_ps(table_[2 * p + 1] + at));
  }

 private:
  int shift_;
  const std::byte* rows_[kRows];
  const float* table_[kRows];
};

}  // namespace sg::regdec

#endif
