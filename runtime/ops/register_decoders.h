// Weight decoders for the 8-token product's registers (RegisterDecode, op_context.h): each
// yields, for a group of 6 weight rows, one zmm per row pair holding rows (2p, 2p + 1) × the
// same 8 k-lanes (low half, high half): the layout linear_kernel.cpp's avx512 kernel widens
// fp16 rows into. The values are the fp16 bits the range decoder of the same format writes
// (constexpr.cpp), widened to fp32, so the product is the same bits as decoding into a tile
// first: the codes are widened exactly, scaled and offset in fp32 in the same order, rounded to
// fp16 where ShiftScale::apply rounds (vcvtps2ph rounds to nearest even like f32_to_f16), and
// palette entries are the widened fp16 entries themselves. 8-bit codes are decoded value by
// value (ShiftScale8, or ShiftScale8Split where every product is a normal fp16 number); 4-bit
// codes are looked up in 16-entry tables (Table4): a palette's own,
// or for shift-scale codes the 16 values each scale (and offset) gives, computed by those same
// steps before the loop (ShiftScale4).
//
// Only for x86 with AVX-512F, chosen at run time (cpu_level() >= kAvx512) by the caller;
// ShiftScale8Fp16 only at kAvx512Fp16, in builds whose compiler has its intrinsics.
#pragma once

#include "ops/aligned_floats.h"
#include "ops/param_f16c.h"
#include "ops/row_groups.h"
#include "ops/split_rounding.h"
#include "shardgate/op_context.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SG_REGDEC_TARGET __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))
#if SG_HAVE_AVX512FP16
#define SG_REGDEC_TARGET_FP16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512fp16,avx2,fma,f16c")))
#endif

namespace sg::regdec {

constexpr int kRows = kPairRowGroup;   // rows per group: 3 pairs
constexpr int kPairs = kRows / 2;

// Rows 2p and 2p + 1 of the group in one zmm: a in the low 8 lanes, b in the high 8.
SG_REGDEC_TARGET inline __m512 halves(float a, float b) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(a), _mm512_set1_ps(b));
}

// To fp16 and back (vcvtps2ph rounds to nearest even, like f32_to_f16). Written with the
// zero-masked forms, every lane selected (the same instructions): in a loop GCC 12 warns that
// the unmasked forms' undefined pass-through is used uninitialised.
SG_REGDEC_TARGET inline __m512 round_f16(__m512 v) {
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm512_maskz_cvtps_ph(0xFFFF, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
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

// The byte holding column k's code in a row of `bits`-bit codes. Column indices are never
// negative; a shift, not a division: GCC cannot know k >= 0 and corrects a signed division
// for negative k with three more instructions, at every step of the kernel.
inline int64_t code_byte(int64_t k, int bits) {
  return static_cast<int64_t>(static_cast<uint64_t>(k) * static_cast<uint64_t>(bits) >> 3);
}

// The codes one cache line ahead of column k of a row (8 steps of 8-bit codes, 16 of 4-bit
// ones) into L1: the kernel reads 6 rows at a time, 8 codes of each per step, and the hardware
// prefetcher alone left it waiting for memory. On Zen 4, 8-token MoE shards, 5 rounds of
// each distance alternated: 64 B int8 per channel 15.6-16.2 ms, int4 per block 17.4-17.8,
// LUT4 14.3; 256 B (the distance before, which the Xeon could not tell from 128 B-1 KiB)
// 16.8 / 18.9 / 15.0; 128 B 15.9 / 17.8 / 15.0; 32 B and none 16.2-16.7 / 17.8-18.5 / 14.9-15.1.
constexpr int64_t kPrefetchBytes = 64;
// And the same column of the next row group's row (`ahead` bytes on: kRows rows) into L2, a
// whole group's run ahead of its use, as linear_kernel.cpp's fp16 kernel does (see there): a
// group's rows start new 4 KiB pages, where the hardware prefetcher stops. The last group has
// no next one: its `ahead` is 0 (group_bytes), so it asks for its own rows, never past them.
SG_REGDEC_TARGET inline void prefetch(const std::byte* row, int64_t k, int bits, int64_t ahead) {
  const char* at = reinterpret_cast<const char*>(row + code_byte(k, bits));
  _mm_prefetch(at + kPrefetchBytes, _MM_HINT_T0);
  _mm_prefetch(at + ahead, _MM_HINT_T1);
}
// The first row of the group after the one at `row` (next_whole_group: the last group, its own).
inline int64_t next_group_row(const RegisterDecode& d, int64_t row) { return next_whole_group(row, kRows, d.rows); }
// The bytes from the codes of the group at `row` to next_group_row's (0 for the last group).
inline int64_t group_bytes(const RegisterDecode& d, int64_t row, int bits) {
  return (next_group_row(d, row) - row) * d.cols * bits / 8;
}

// 8 codes of 8-bit row a at column k, then 8 of row b, prefetching both rows ahead.
SG_REGDEC_TARGET inline __m128i code_bytes(const std::byte* a, const std::byte* b, int64_t k, int64_t ahead) {
  prefetch(a, k, 8, ahead);
  prefetch(b, k, 8, ahead);
  const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + k));
  return _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(lo), reinterpret_cast<const double*>(b + k)));
}

// Parameters first .. first + n - 1 of v widened into out, 16 fp16 values per instruction.
SG_REGDEC_TARGET inline void widen_params(const ParamView& v, int64_t first, int64_t n, float* out) {
  int64_t i = 0;
  if (const uint16_t* h = v.f16()) {
    for (; i + 16 <= n; i += 16) {
      _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + first + i))));
    }
  }
  for (; i < n; ++i) out[i] = param_f16c(v, first + i);
}

// The calling thread's scratch for a row group's parameters widened to fp32 (reused across
// calls, grown to the largest seen: 2 x 6 rows x the parameter columns).
inline float* param_scratch(size_t floats) {
  thread_local AlignedFloats scratch;
  return scratch.grow(floats);
}

// How a shift-scale weight's codes are offset before scaling (ShiftScale::apply in
// constexpr.cpp): not at all, by an offset rounded to fp16 with the difference rounded to fp16
// too, or (fp32 offset with a fp16 scale) in fp32.
enum class Offset { kNone, kRounded, kWider };

// s · x rounded to fp16 (nearest, ties to even) and widened back, for an fp16 scale s, an
// integer x with |x| <= 255, and s8193 = s · 8193, where the product is zero or a normal fp16
// number: Veltkamp's split of the exact fp32 product v = s · x at 13 bits, c - (c - v) with
// c = fl(v · 8193) = fl(s8193 · x) (s · 8193 has 24 bits, so both round the same exact
// product once). Two multiplies and two subtractions instead of a multiply and the fp16 round
// trip (vcvtps2ph + vcvtph2ps, round_f16): on Zen 4 the subtractions run beside the FMAs.
// Exact for every fp16 scale and every such code: all 19.4 M pairs
// (RegisterDecode.SplitRoundsLikeF16ForEveryScaleWhereTheProductIsNormal), and through the
// decoder every scale it admits with every code
// (RegisterDecode.SplitRoundsEveryAdmittedScaleTimesEveryCodeLikeF16).
SG_REGDEC_TARGET inline __m512 split_round_f16(__m512 s, __m512 s8193, __m512 x) {
  __m512 c = _mm512_mul_ps(s8193, x);
  // c must be rounded to fp32: the split rests on it. GCC contracts a multiply into the
  // additions that use it (-ffp-contract=fast), which here would compute c - (c - v) from the
  // exact product; the empty asm makes c an opaque register value. (v = s · x may fuse into
  // c - v: it is exact, so the fused form rounds the same difference once.)
  asm("" : "+v"(c));
  return _mm512_sub_ps(c, _mm512_sub_ps(c, _mm512_mul_ps(s, x)));
}

// 8-bit integer codes (signed or not) scaled per parameter block, with an offset or none:
// constexpr_blockwise_shift_scale (4-bit codes go through ShiftScale4's tables instead).
// Everything that selects an instruction is a template parameter, so the kernel's loop holds no
// branch and its accumulators stay in registers.
//
// Blocked: the parameters change along a row every 2^block_shift columns and are looked up
// at every step; otherwise one parameter serves a whole row and is loaded once. (The kernel
// must not branch to reload them: GCC then keeps its accumulators on the stack.)
//
// Split: the product is rounded to fp16 by split_round_f16 instead of the round trip, for one
// fp16 scale per row, no offset, and every scale keeping each nonzero product with a code a
// normal fp16 number (RegisterDecode::split_rounding, set when the stream is made). 8-token int8 MoE shard on Zen 4:
// 17.8 -> 16.7-17.0 ms (bench/README.md). The two forms are named below: ShiftScale8 and
// ShiftScale8Split.
template <bool Signed, Offset Off, bool Blocked, bool Split>
class ShiftScale8Rows {
  static_assert(!Split || (Off == Offset::kNone && !Blocked), "the split rounds s · x for one scale per row");

 public:
  SG_REGDEC_TARGET ShiftScale8Rows(const RegisterDecode& d, int64_t row) : shift_(d.block_shift), ahead_(group_bytes(d, row, 8)) {
    for (int i = 0; i < kRows; ++i) rows_[i] = row_codes(d, row + i, 8);
    if constexpr (Blocked) {
      // The group's parameter rows widened once into the thread's scratch ([scale | offset]
      // [row][column]), so the loop reads fp32 parameters at a fixed stride.
      const int64_t cols = d.param_cols;
      float* scales = param_scratch(static_cast<size_t>(2 * kRows * cols));
      float* offsets = scales + kRows * cols;
      for (int i = 0; i < kRows; ++i) {
        const int64_t first = param_row_start(d, row + i);
        widen_params(d.scale, first, cols, scales + i * cols);
        if constexpr (Off != Offset::kNone) widen_params(d.offset, first, cols, offsets + i * cols);
      }
      scale_tab_ = scales;
      offset_tab_ = offsets;
      cols_ = cols;
    } else {
      for (int p = 0; p < kPairs; ++p) {
        const int64_t ia = param_row_start(d, row + 2 * p), ib = param_row_start(d, row + 2 * p + 1);
        const float sa = param_f16c(d.scale, ia), sb = param_f16c(d.scale, ib);
        scale_[p] = halves(sa, sb);
        // Split: the second operand is s · 8193 (split_round_f16); otherwise the offsets.
        if constexpr (Split) {
          second_[p] = halves(sa * 8193.0f, sb * 8193.0f);
        } else {
          second_[p] = Off != Offset::kNone ? halves(param_f16c(d.offset, ia), param_f16c(d.offset, ib))
                                            : _mm512_setzero_ps();
        }
      }
    }
  }

  // Rows 2p, 2p + 1 at columns k .. k + 7.
  SG_REGDEC_TARGET __m512 pair(int p, int64_t k) const {
    __m512 scale, second;  // the offset, or with Split the scale times 8193
    if constexpr (Blocked) {
      params(p, k >> shift_, scale, second);
    } else {
      scale = scale_[p];
      second = second_[p];
    }
    const __m128i codes = code_bytes(rows_[2 * p], rows_[2 * p + 1], k, ahead_);
    // Zero-masked forms, every lane selected (the same instructions): GCC 12 warns of the
    // unmasked forms' undefined pass-through once this is inlined outside the kernel's loop.
    const __m512i wide = Signed ? _mm512_maskz_cvtepi8_epi32(0xFFFF, codes) : _mm512_maskz_cvtepu8_epi32(0xFFFF, codes);
    const __m512 x = _mm512_maskz_cvtepi32_ps(0xFFFF, wide);
    if constexpr (Split) {
      return split_round_f16(scale, second, x);
    } else if constexpr (Off == Offset::kNone) {
      return round_f16(_mm512_mul_ps(scale, x));
    } else if constexpr (Off == Offset::kWider) {
      return round_f16(_mm512_mul_ps(scale, _mm512_sub_ps(x, second)));
    } else {
      return round_f16(_mm512_mul_ps(scale, round_f16(_mm512_sub_ps(x, second))));
    }
  }

 private:
  // The scale (and offset) of pair p's two rows in parameter column q.
  SG_REGDEC_TARGET void params(int p, int64_t q, __m512& scale, __m512& offs) const {
    const int64_t ia = 2 * p * cols_ + q, ib = ia + cols_;
    scale = halves(scale_tab_[ia], scale_tab_[ib]);
    if constexpr (Off != Offset::kNone) {
      offs = halves(offset_tab_[ia], offset_tab_[ib]);
    } else {
      offs = _mm512_setzero_ps();
    }
  }

  const float* scale_tab_ = nullptr;   // Blocked: the group's parameters (param_scratch),
  const float* offset_tab_ = nullptr;  // row i's at i · cols_
  int64_t cols_ = 0;
  int shift_;
  int64_t ahead_;
  const std::byte* rows_[kRows];
  __m512 scale_[kPairs];
  __m512 second_[kPairs];  // the offsets, or with Split the scales times 8193
};

// The round trip to fp16 (vcvtps2ph + vcvtph2ps), for every parameter layout and offset.
template <bool Signed, Offset Off, bool Blocked>
using ShiftScale8 = ShiftScale8Rows<Signed, Off, Blocked, false>;

// One fp16 scale per row, no offset, every product a normal fp16 number: the split.
template <bool Signed>
using ShiftScale8Split = ShiftScale8Rows<Signed, Offset::kNone, false, true>;

#if SG_HAVE_AVX512FP16
// ShiftScale8 with fp16 arithmetic (the avx512fp16 level), for one parameter per row and no
// offset or an fp16 one: the codes convert to fp16 exactly (|code| < 2048), the offset is
// subtracted and the scale applied by fp16 instructions, each rounding once to nearest even,
// which is what the fp32 steps followed by a rounding to fp16 give (the fp32 product of two
// fp16 values is exact; the fp32 difference of a code and an fp16 offset may round, but
// rounding to 24 bits and then to 11 is the same as rounding once to 11, since 24 >= 2·11 + 2).
// Per row pair and 8 columns: 1 widening, 1 conversion, 1 multiply (and 1 subtraction), and
// the widening of the fp16 result, against ShiftScale8's conversion, multiply and round trip.
template <bool Signed, Offset Off>
class ShiftScale8Fp16 {
  static_assert(Off != Offset::kWider, "an fp32 offset is subtracted in fp32: ShiftScale8");

 public:
  static constexpr bool kFp16 = true;

  SG_REGDEC_TARGET_FP16 ShiftScale8Fp16(const RegisterDecode& d, int64_t row) : ahead_(group_bytes(d, row, 8)) {
    for (int i = 0; i < kRows; ++i) rows_[i] = row_codes(d, row + i, 8);
    for (int p = 0; p < kPairs; ++p) {
      const int64_t ia = param_row_start(d, row + 2 * p), ib = param_row_start(d, row + 2 * p + 1);
      scale_[p] = halves_f16(param_f16c(d.scale, ia), param_f16c(d.scale, ib));
      if constexpr (Off == Offset::kRounded) offs_[p] = halves_f16(param_f16c(d.offset, ia), param_f16c(d.offset, ib));
    }
  }

  SG_REGDEC_TARGET_FP16 __m512 pair(int p, int64_t k) const {
    const __m128i codes = code_bytes(rows_[2 * p], rows_[2 * p + 1], k, ahead_);
    __m256h v = _mm256_cvtepi16_ph(Signed ? _mm256_cvtepi8_epi16(codes) : _mm256_cvtepu8_epi16(codes));
    if constexpr (Off == Offset::kRounded) v = _mm256_sub_ph(v, offs_[p]);
    return _mm512_cvtxph_ps(_mm256_mul_ph(v, scale_[p]));
  }

 private:
  // a (an fp16 value held in fp32) in the low 8 fp16 lanes, b in the high 8: exact.
  SG_REGDEC_TARGET_FP16 static __m256h halves_f16(float a, float b) {
    const __m128i ha = _mm256_cvtps_ph(_mm256_set1_ps(a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i hb = _mm256_cvtps_ph(_mm256_set1_ps(b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_castsi256_ph(_mm256_inserti128_si256(_mm256_castsi128_si256(ha), hb, 1));
  }

  int64_t ahead_;
  const std::byte* rows_[kRows];
  __m256h scale_[kPairs];
  __m256h offs_[kPairs];
};
#endif

// The calling thread's scratch for the tables a Table4 decoder looks weights up in (reused
// across calls, grown to the largest seen: 6 rows x 16 floats per column block it holds).
inline float* table_scratch(size_t floats) {
  thread_local AlignedFloats scratch;
  return scratch.grow(floats);
}

// 4-bit codes looked up in 16-entry tables of widened fp16 values: one table per row, and per
// column block when Blocked (the table changes along a row every 2^block_shift columns). The
// subclass fills the tables of the group's 6 rows into the thread's scratch, block by block
// ([block][row][16]), so the loop finds any row's table from one pointer: all of them before
// the k loop, or (Rolling) a chunk's at a time, the first being block tq0_ / 96.
//
// Per row pair and 8 columns the lookup is 4 vector instructions and the permute: row a's 8
// codes (one dword) broadcast to all lanes and row b's merged into the high half, each lane
// shifted to its own nibble, masked to it with the table-select bit set in row b's lanes
// (one ternary-logic op), and one two-table permute (it reads only the low 5 bits).
template <bool Blocked, bool Rolling = false>
class Table4 {
 public:
  SG_REGDEC_TARGET __m512 pair(int p, int64_t k) const {
    const std::byte* ra = rows_[2 * p];
    const std::byte* rb = rows_[2 * p + 1];
    prefetch(ra, k, 4, ahead_);
    prefetch(rb, k, 4, ahead_);
    int32_t a, b;
    std::memcpy(&a, ra + code_byte(k, 4), sizeof a);
    std::memcpy(&b, rb + code_byte(k, 4), sizeof b);
    const __m512i both = _mm512_mask_set1_epi32(_mm512_set1_epi32(a), 0xFF00, b);
    const __m512i shift = _mm512_set_epi32(28, 24, 20, 16, 12, 8, 4, 0, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m512i select = _mm512_set_epi32(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
    // (shifted & 15) | select: ternary-logic truth table 0xEA is (A & B) | C.
    const __m512i idx =
        _mm512_ternarylogic_epi32(_mm512_srlv_epi32(both, shift), _mm512_set1_epi32(15), select, 0xEA);
    // Rolling: the tables of the current chunk only, the first being block q0 (tq0_ = q0 · 96).
    const float* t = tables_ + (Blocked ? (k >> shift_) * (kRows * 16) - (Rolling ? tq0_ : 0) : 0) + p * 32;
    return _mm512_permutex2var_ps(_mm512_loadu_ps(t), idx, _mm512_loadu_ps(t + 16));
  }

 protected:
  // table_blocks: how many column blocks' tables the scratch holds (all of them, or a chunk's).
  SG_REGDEC_TARGET Table4(const RegisterDecode& d, int64_t row, int64_t table_blocks)
      : shift_(d.block_shift), ahead_(group_bytes(d, row, 4)), blocks_(Blocked ? d.param_cols : 1),
        tables_(table_scratch(static_cast<size_t>(kRows * 16 * table_blocks))) {
    for (int i = 0; i < kRows; ++i) rows_[i] = row_codes(d, row + i, 4);
  }
  SG_REGDEC_TARGET Table4(const RegisterDecode& d, int64_t row) : Table4(d, row, Blocked ? d.param_cols : 1) {}
  // Where row i's table for column block q (counted from the scratch's first) goes.
  float* table(int i, int64_t q) { return tables_ + (q * kRows + i) * 16; }

  int shift_;
  int64_t ahead_;
  int64_t blocks_;
  float* tables_;
  int64_t tq0_ = 0;
  const std::byte* rows_[kRows];
};

// constexpr_lut_to_dense's scalar form: the tables are the weight's own palettes, copied.
template <bool Blocked>
class Lut4 : public Table4<Blocked> {
 public:
  SG_REGDEC_TARGET Lut4(const RegisterDecode& d, int64_t row) : Table4<Blocked>(d, row) {
    for (int i = 0; i < kRows; ++i) {
      const float* palettes = d.tables + param_row_start(d, row + i) * 16;
      for (int64_t q = 0; q < this->blocks_; ++q) {
        _mm512_storeu_ps(this->table(i, q), _mm512_loadu_ps(palettes + q * 16));
      }
    }
  }
};

// 4-bit constexpr_blockwise_shift_scale codes: a 4-bit code takes 16 values per parameter
// (scale, offset), so the decoder evaluates ShiftScale::apply's steps once on the 16 codes of
// each parameter of its 6 rows (the same fp32 operations and fp16 roundings, element by
// element, as decoding each weight), and the loop looks weights up like a palette. Decoding
// each weight instead cost about twice the FMAs it fed.
//
// One parameter per row: the 6 tables are computed by the constructor. Per column block
// (Blocked): a 64-byte table per 32 codes is 4× the codes' bytes, and computing all of a row
// group's tables before its k loop wrote them beyond L1 (147 KiB for K = 12288) and waited on
// those stores; so the tables are computed a chunk of kChunkCols columns at a time, by
// prepare(), which the kernel calls before each chunk, into an L1-resident 6 KiB.
template <bool Signed, Offset Off, bool Blocked>
class ShiftScale4 : public Table4<Blocked, Blocked> {
  using Base = Table4<Blocked, Blocked>;

 public:
  static constexpr int64_t kChunkCols = 512;
  static constexpr bool kRolling = Blocked;

  SG_REGDEC_TARGET ShiftScale4(const RegisterDecode& d, int64_t row) : Base(d, row, chunk_blocks(d)) {
    // The group's parameters widened once ([scale | offset][row][block], param_scratch).
    const int64_t blocks = this->blocks_;
    float* params = param_scratch(static_cast<size_t>(2 * kRows * blocks));
    for (int i = 0; i < kRows; ++i) {
      const int64_t first = param_row_start(d, row + i);
      widen_params(d.scale, first, blocks, params + i * blocks);
      if constexpr (Off != Offset::kNone) widen_params(d.offset, first, blocks, params + (kRows + i) * blocks);
    }
    params_ = params;
    if constexpr (!Blocked) {
      tables_for(0, 1);
    } else {
      // The next group's fp16 scale rows (next_group_row: the last group, its own), asked for
      // a chunk at a time by prepare(): without it the constructor waited on them (3.6% of the
      // int4 per block MoE shard's run, nearly all on the widening's first store).
      const uint16_t* h = d.scale.f16();
      const int64_t next = next_group_row(d, row);
      for (int i = 0; i < kRows; ++i) next_scales_[i] = h != nullptr ? h + param_row_start(d, next + i) : nullptr;
    }
  }

  // Columns per call of prepare(): a whole number of column blocks.
  int64_t chunk_cols() const { return std::max<int64_t>(kChunkCols, int64_t{1} << this->shift_); }

  // The tables of columns [k0, k1) (k0 a multiple of chunk_cols()).
  SG_REGDEC_TARGET void prepare(int64_t k0, int64_t k1) {
    const int64_t q0 = k0 >> this->shift_;
    const int64_t q1 = (k1 + (int64_t{1} << this->shift_) - 1) >> this->shift_;
    this->tq0_ = q0 * (kRows * 16);
    for (const uint16_t* n : next_scales_) {
      if (n != nullptr) _mm_prefetch(reinterpret_cast<const char*>(n + q0), _MM_HINT_T1);
    }
    tables_for(q0, q1);
  }

 private:
  static int64_t chunk_blocks(const RegisterDecode& d) {
    if (!Blocked) return 1;
    return std::max<int64_t>(1, kChunkCols >> d.block_shift);
  }

  // Blocks [q0, q1) into the scratch from its start.
  SG_REGDEC_TARGET void tables_for(int64_t q0, int64_t q1) {
    // The code each nibble holds, as apply() widens it (exact in fp16 and fp32).
    const __m512 code = Signed ? _mm512_set_ps(-1, -2, -3, -4, -5, -6, -7, -8, 7, 6, 5, 4, 3, 2, 1, 0)
                               : _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const int64_t blocks = this->blocks_;
    for (int64_t q = q0; q < q1; ++q) {
      for (int i = 0; i < kRows; ++i) {
        const __m512 scale = _mm512_set1_ps(params_[i * blocks + q]);
        __m512 v;
        if constexpr (Off == Offset::kNone) {
          v = _mm512_mul_ps(scale, code);
        } else {
          const __m512 offs = _mm512_set1_ps(params_[(kRows + i) * blocks + q]);
          if constexpr (Off == Offset::kWider) {
            v = _mm512_mul_ps(scale, _mm512_sub_ps(code, offs));
          } else {
            v = _mm512_mul_ps(scale, round_f16(_mm512_sub_ps(code, offs)));
          }
        }
        _mm512_storeu_ps(this->table(i, q - q0), round_f16(v));
      }
    }
  }

  const float* params_ = nullptr;
  const uint16_t* next_scales_[kRows] = {};
};

// The kernel's chunking (register_kernel.inc): decoders with rolling tables say how many
// columns a prepare() covers; the others are one chunk of all K.
template <class Dec>
int64_t chunk_cols_of(const Dec& dec, int64_t K) {
  if constexpr (requires { Dec::kRolling; }) {
    if constexpr (Dec::kRolling) return dec.chunk_cols();
  }
  return K;
}
template <class Dec>
SG_REGDEC_TARGET inline void prepare_chunk(Dec& dec, int64_t k0, int64_t k1) {
  if constexpr (requires { Dec::kRolling; }) {
    if constexpr (Dec::kRolling) dec.prepare(k0, k1);
  }
}

}  // namespace sg::regdec

#endif
