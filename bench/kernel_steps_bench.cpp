// kernel_steps_bench: what one 8-token k-step's weight loading and decoding costs the FMAs,
// instruction form by instruction form, with its data in L1 or L2 (never memory). Each
// benchmark runs the step of linear_kernel.cpp's avx512 kernels (3 row pairs × 8 tokens = 24
// FMAs, 8 activation broadcasts, the next step's 3 weight vectors made during this step's
// FMAs) with one way of making the weight vectors, and reports GFLOP/s in process CPU time:
// divide by `fmas` (no weight vectors made at all) for what the form costs. The forms are the
// kernels' own and the ones measured against them (bench/README.md, "The 8-token kernel in
// every format" and "int4 per block: tables from exponents"):
//
//   fmas               the 24 FMAs and 8 broadcasts alone (the weights stay in registers)
//   fmas_loads         the activations loaded whole (16 floats) instead of broadcast from 8
//   fmas_x_l2          the FMAs alone, the activations read from 256 KiB (L2), not 16 (L1)
//   fp16_insert128     two fp16 rows joined by vinserti128 in 256 bits, widened in 512
//   fp16_halves        each fp16 row widened into its own 256-bit half, joined (load_pair)
//   fp16_halves_x_l2   the same, the activations read from 256 KiB (L2)
//   int8_convert       8-bit codes (two rows' qwords joined, as code_bytes): widened to int32
//                      and converted to fp32, nothing else (no scale: not a decode)
//   int8_mul1          the same times the pair's scales: one multiply, the least any scaled
//                      form does (still not the decode: the product is not rounded to fp16)
//   int8_imul1         the codes times an integer (vpmulld) and converted: that multiply off
//                      the FP multiply, to see whether it is any cheaper (it is not)
//   int8_round_trip    the decode by the fp16 round trip: multiply, vcvtps2ph, vcvtph2ps
//   int8_split         the kernel's decode (regdec::ShiftScale8Split): Veltkamp's split, two
//                      multiplies and two subtractions (GCC fuses one multiply into a vfnmadd)
//   int8_integer_split the split in units of the scale's last bit: c by vpmulld and a
//                      conversion, so one multiply leaves the FP pipes (measured, not kept:
//                      bench/README.md, "int8: what a decode costs the FMAs")
//   int8_table         no multiply: 256-entry fp16 tables in byte planes, 4 steps' codes of
//                      a pair looked up at once by vpermi2b, stored, widened by each step
//                      (one table for all rows, as int8 per tensor; measured, not kept)
//   int8_table_per_row the same with each row its own table (int8 per channel)
//   int8_table_no_lookup   its data movement alone (the planes an XOR of the codes)
//   int8_table_steps_only  its steps alone, widening stored words (no decode)
//   lut4_kernel        4-bit codes: a broadcast and a masked broadcast of the two rows'
//                      dwords, vpsrlvd, vpternlogd, vpermt2ps (regdec::Table4::pair)
//   lut4_index         the same index, no lookup (the index as the weight vector)
//   lut4_joined_codes  the two dwords broadcast in 256 bits each and joined
//   lut4_per_half      each row looked up in 256 bits by its own two-table permute, joined
//   lut4_two_vpermps   a one-table vpermps and a masked one, no ternary logic
//   lut4_fp16_vpermw   fp16 tables, one vpermw of both rows' 32 entries, widened
//   lut4_fp16_vpermb   fp16 tables by bytes: vpmultishiftqb puts each nibble in bits 1-4 of
//                      both bytes of its word, vpternlogd sets the byte's parity and the row
//                      select, one vpermb of the pair's 64 table bytes, vcvtph2ps
//   lut4_fp16_vpermw_shift  the same index made for vpermw (a byte per word, from bit 4m)
//   lut4_fp16_vpermw_shuf   vpermw's index by vpshufb and vpsrlvw instead of the multishift
//   lut4_fp16_index_only    lut4_fp16_vpermb's index alone, widened as if it were fp16
//   lut4_fp16_lookup_only   its vpermb and widening alone, the index a plain mask of the codes
//
// and the ways of making int4-per-block tables (a 16-entry table per row and 32 columns) that
// were measured against its table pass (ShiftScale4::prepare computes them a 512-column chunk
// at a time, before the chunk's steps):
//
//   lut4_table_round   lut4_kernel, and one table per step made inside the step as the table
//                      pass makes it: the scale broadcast, times the 16 codes, rounded to fp16
//                      and back, stored (64 bytes)
//   lut4_table_exp     the same table from a 64 KiB table of round(m · code) for the 1024
//                      fp16 significands m: loaded, the scale's exponent and sign added as
//                      integers (and, add), stored
//   rows4_fmas         a 4-row group's step (2 row pairs × 8 tokens = 16 FMAs, 8 broadcasts)
//   rows4_lut4         its lookups from tables held in registers (no stores)
//   rows4_lut4_exp     the same, the 4 tables made in registers every 4 steps (32 columns)
//                      by the exponent form
//
// and the table pass itself, without FMAs, in CPU ns per table (per row and 32 columns):
//
//   table_pass            the kernel's (ShiftScale4::tables_for): multiply, fp16 round trip,
//                         a 64-byte store
//   table_pass_stores     the scale broadcast and stored alone
//   table_pass_fp16_rows  the 32 columns decoded to fp16 rows instead (vpermw from an fp16
//                         table in a register), as a decoder feeding fp16 steps would
//
// The values are not checked (the kernels' tests do that); only the instructions count. The
// exception: the int8_table lookups, which no kernel has, check one block's words against their
// codes looked up one by one before timing (block8_decodes). Needs AVX-512F/VL/BW/VBMI (every
// form is skipped otherwise).
//
//   kernel_steps_bench [--benchmark_* flags]
#include "shardgate/cpu.h"

#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass an undefined vector through where every lane is written;
// where a form inlines outside a loop it warns that the undefined vector is used uninitialised.
// The kernels write zero-masked forms instead; here the plain forms are what is measured.
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

#define SG_STEP_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vbmi,avx2,fma,f16c")))

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Everything a step reads: 64 steps of packed activations (16 KiB; 1024 steps, 256 KiB, for the
// forms that read them from L2), 6 fp16 rows (24 KiB) and
// 6 rows of 4-bit codes (6 KiB) of 256 steps each, the three pairs' 16-entry tables (fp32 and
// fp16), and the table forms' sources. A form reads the activations and its own part: 22-40
// KiB, so on a 32 KiB L1 (Zen 4) the fp16 rows come partly from L2, and the exponent form's 64
// KiB table from L2 as in a kernel.
struct alignas(64) Data {
  float x[1024 * 64];
  uint16_t w16[6 * 2048];
  uint8_t c4[6 * 1024 + 64];
  int8_t c8[6 * 2048];
  float t[96];
  uint16_t th[96];
  // The exponent form's table (in a kernel row m would hold round(code · (1024 + m)) · 2^-25
  // for the 16 codes; here only its size and the spread of the rows read matter) and its jobs
  // (which row, which exponent and sign), cycling through 4096 entries.
  float exp_rows[1024 * 16];
  uint32_t exp_row[4096];
  uint32_t exp_add[4096];
  float scale[4096];
  float ring[64 * 16];
  // The table passes' outputs: a chunk's 96 tables (16 column blocks × 6 rows), or its 6 rows
  // of 512 columns decoded to fp16.
  float tables[96 * 16];
  uint16_t rows16[6 * 512];
  // int8_table's byte tables: per row, the low bytes of the 256 codes' fp16 values, then the
  // high bytes (code c at index c & 255).
  alignas(64) uint8_t t8[6][512];
};

SG_STEP_TARGET inline __m512 join_halves(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

// The dwords of rows 2p and 2p + 1's 8 codes at step s.
inline void codes4(const Data& d, int p, int64_t s, int32_t& a, int32_t& b) {
  const int64_t at = (s & 255) * 4;
  std::memcpy(&a, d.c4 + (2 * p) * 1024 + at, sizeof a);
  std::memcpy(&b, d.c4 + (2 * p + 1) * 1024 + at, sizeof b);
}

SG_STEP_TARGET inline __m512i shifts() {
  return _mm512_set_epi32(28, 24, 20, 16, 12, 8, 4, 0, 28, 24, 20, 16, 12, 8, 4, 0);
}
SG_STEP_TARGET inline __m512i select16() {
  return _mm512_set_epi32(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
}

// The kernel's 4-bit index of a pair (regdec::Table4::pair): row a's code dword broadcast, row
// b's merged into the high half, each lane shifted to its nibble, masked to it with the
// second-table bit set in row b's lanes.
SG_STEP_TARGET inline __m512i lut4_index(int32_t a, int32_t b) {
  const __m512i both = _mm512_mask_set1_epi32(_mm512_set1_epi32(a), 0xFF00, b);
  return _mm512_ternarylogic_epi32(_mm512_srlv_epi32(both, shifts()), _mm512_set1_epi32(15), select16(), 0xEA);
}

struct Fmas {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t) { return _mm512_set1_ps(d.t[p]); }
};
struct Fp16Insert128 {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    const uint16_t* r = d.w16 + (2 * p) * 2048 + (s & 255) * 8;
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r))),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2048)), 1);
    return _mm512_cvtph_ps(h);
  }
};
struct Fp16Halves {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    const uint16_t* r = d.w16 + (2 * p) * 2048 + (s & 255) * 8;
    return join_halves(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r))),
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2048))));
  }
};
// 8-bit codes (regdec::ShiftScale8Rows): rows 2p and 2p + 1's 8 codes at step s, one qword
// each, joined (code_bytes) and sign-extended to int32.
SG_STEP_TARGET inline __m512i codes8(const Data& d, int p, int64_t s) {
  const int8_t* a = d.c8 + (2 * p) * 2048 + (s & 255) * 8;
  const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a));
  const __m128i both = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(lo), reinterpret_cast<const double*>(a + 2048)));
  return _mm512_cvtepi8_epi32(both);
}
// The pair's two scales (rows 2p and 2p + 1 in the low and high half), and the same scales as
// integer significands m (1024 <= m < 2048) times `mult`.
SG_STEP_TARGET inline __m512 pair_scale(const Data& d, int p) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d.t[2 * p]), _mm512_set1_ps(d.t[2 * p + 1]));
}
SG_STEP_TARGET inline __m512i pair_m(int p, int mult) {
  return _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32((1024 + 37 * p) * mult), _mm512_set1_epi32((1031 + 37 * p) * mult));
}
// Veltkamp's split at 13 bits: c - (c - n) for c = fl(8193 · n) is n rounded to 11 bits.
SG_STEP_TARGET inline __m512 veltkamp(__m512 c, __m512 n) {
  asm("" : "+v"(c));  // c stays a rounded value (as split_round_f16 keeps it)
  return _mm512_sub_ps(c, _mm512_sub_ps(c, n));
}
struct Int8Convert {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) { return _mm512_cvtepi32_ps(codes8(d, p, s)); }
};
struct Int8Mul1 {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    return _mm512_mul_ps(pair_scale(d, p), _mm512_cvtepi32_ps(codes8(d, p, s)));
  }
};
struct Int8IMul1 {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    return _mm512_cvtepi32_ps(_mm512_mullo_epi32(codes8(d, p, s), pair_m(p, 8193)));
  }
};
struct Int8RoundTrip {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    const __m512 v = Int8Mul1::pair(d, p, s);
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};
struct Int8Split {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    const __m512 x = _mm512_cvtepi32_ps(codes8(d, p, s)), sc = pair_scale(d, p);
    return veltkamp(_mm512_mul_ps(_mm512_mul_ps(sc, _mm512_set1_ps(8193.0f)), x), _mm512_mul_ps(sc, x));
  }
};
// In units of the scale's last significand bit (the kernel would multiply each accumulator
// by 2^exponent at the end): n = m · x by a multiply, c = fl(m · 8193 · x) by vpmulld and a
// conversion, so one of the split's two multiplies leaves the FMA pipes.
struct Int8IntegerSplit {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    const __m512i x = codes8(d, p, s);
    const __m512 n = _mm512_mul_ps(_mm512_cvtepi32_ps(x), _mm512_cvtepi32_ps(pair_m(p, 1)));
    return veltkamp(_mm512_cvtepi32_ps(_mm512_mullo_epi32(x, pair_m(p, 8193))), n);
  }
};
// The product rounded to fp16 by integer steps on its fp32 bits (exact where the result is a
// normal fp16 number, as for the split): add 0xFFF and the bit that becomes the last kept one
// (ties to even), clear the 13 dropped bits. Shift form: vpsrld, vpandd, two vpaddd, vpandd;
// mask form: vptestmd of that bit, vpblendmd of 0x1000 or 0xFFF, vpaddd, vpandd.
template <bool Mask>
struct Int8IntRound {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    const __m512i b = _mm512_castps_si512(Int8Mul1::pair(d, p, s));
    __m512i r;
    if constexpr (Mask) {
      const __mmask16 odd = _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x2000));
      r = _mm512_add_epi32(b, _mm512_mask_blend_epi32(odd, _mm512_set1_epi32(0xFFF), _mm512_set1_epi32(0x1000)));
    } else {
      const __m512i tie = _mm512_and_si512(_mm512_srli_epi32(b, 13), _mm512_set1_epi32(1));
      r = _mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0xFFF)), tie);
    }
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(static_cast<int32_t>(0xFFFFE000u))));
  }
};
struct Lut4Kernel {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(d.t + 32 * p), lut4_index(a, b), _mm512_loadu_ps(d.t + 32 * p + 16));
  }
};
struct Lut4Index {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return _mm512_castsi512_ps(lut4_index(a, b));
  }
};
struct Lut4JoinedCodes {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    const __m512i both = _mm512_castps_si512(
        join_halves(_mm256_castsi256_ps(_mm256_set1_epi32(a)), _mm256_castsi256_ps(_mm256_set1_epi32(b))));
    const __m512i idx = _mm512_ternarylogic_epi32(_mm512_srlv_epi32(both, shifts()), _mm512_set1_epi32(15), select16(), 0xEA);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(d.t + 32 * p), idx, _mm512_loadu_ps(d.t + 32 * p + 16));
  }
};
struct Lut4PerHalf {
  SG_STEP_TARGET static __m256 half(int32_t c, const float* t) {
    const __m256i idx = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(c), _mm256_set_epi32(28, 24, 20, 16, 12, 8, 4, 0)),
                                         _mm256_set1_epi32(15));
    return _mm256_permutex2var_ps(_mm256_loadu_ps(t), idx, _mm256_loadu_ps(t + 8));
  }
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return join_halves(half(a, d.t + 32 * p), half(b, d.t + 32 * p + 16));
  }
};
struct Lut4TwoVpermps {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    const __m512i idx = _mm512_srlv_epi32(_mm512_mask_set1_epi32(_mm512_set1_epi32(a), 0xFF00, b), shifts());
    const __m512 ra = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(d.t + 32 * p));
    return _mm512_mask_permutexvar_ps(ra, 0xFF00, idx, _mm512_loadu_ps(d.t + 32 * p + 16));
  }
};
struct Lut4Fp16Vpermw {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    // Byte j of each qword: the 8 bits from bit 4j of that qword (row a's dword, then row b's).
    const __m128i ctl = _mm_set_epi8(28, 24, 20, 16, 12, 8, 4, 0, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m128i nibbles = _mm_multishift_epi64_epi8(ctl, _mm_set_epi64x(static_cast<uint32_t>(b), static_cast<uint32_t>(a)));
    const __m256i words = _mm256_cvtepu8_epi16(nibbles);
    const __m256i sel = _mm256_set_epi16(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i idx = _mm256_ternarylogic_epi32(words, _mm256_set1_epi16(15), sel, 0xEA);
    const __m512i r = _mm512_permutexvar_epi16(_mm512_castsi256_si512(idx), _mm512_loadu_si512(d.th + 32 * p));
    return _mm512_cvtph_ps(_mm512_castsi512_si256(r));
  }
};

// fp16 tables looked up by bytes: the two rows' code dwords broadcast into 256 bits (row a's in
// qwords 0-1, row b's in 2-3), vpmultishiftqb puts each code's nibble in bits 1-4 of both bytes
// of its word (from bit 4m - 1: bit 0 and bits 5-7 are the neighbours', masked off), vpternlogd
// masks them and sets the byte's parity and row b's table bit (32), one vpermb of the pair's 32
// fp16 entries (64 bytes) reads both bytes of each weight, vcvtph2ps widens.
struct ByteIndexConsts {
  alignas(32) uint8_t ctl[32];
  alignas(32) uint8_t pat[32];
  ByteIndexConsts() {
    for (int i = 0; i < 32; ++i) {
      const int lane = i / 8, m = 4 * (lane % 2) + (i % 8) / 2;
      ctl[i] = static_cast<uint8_t>((4 * m - 1) & 63);
      pat[i] = static_cast<uint8_t>((i & 1) | (lane >= 2 ? 32 : 0));
    }
  }
};
const ByteIndexConsts kByteIndex;
// The same for vpermw: each word's low byte from bit 4m (its high byte ignored by vpermw), the
// word masked to 4 bits with row b's table bit (16) set.
struct WordIndexConsts {
  alignas(32) uint8_t ctl[32];
  alignas(32) uint16_t pat[16];
  WordIndexConsts() {
    for (int i = 0; i < 32; ++i) ctl[i] = static_cast<uint8_t>((4 * (4 * ((i / 8) % 2) + (i % 8) / 2)) & 63);
    for (int w = 0; w < 16; ++w) pat[w] = static_cast<uint16_t>(w >= 8 ? 16 : 0);
  }
};
const WordIndexConsts kWordIndex;

SG_STEP_TARGET inline __m256i both_dwords(int32_t a, int32_t b) {
  return _mm256_mask_set1_epi32(_mm256_set1_epi32(a), 0xF0, b);
}
SG_STEP_TARGET inline __m256i load256(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
// lut4_fp16_vpermb's index of a pair: both bytes of each weight's word.
SG_STEP_TARGET inline __m256i byte_index(int32_t a, int32_t b) {
  const __m256i raw = _mm256_multishift_epi64_epi8(load256(kByteIndex.ctl), both_dwords(a, b));
  return _mm256_ternarylogic_epi32(raw, _mm256_set1_epi8(0x1E), load256(kByteIndex.pat), 0xEA);
}
// vpermw's index from words holding their nibble in the low 4 bits: masked, row b's bit set.
SG_STEP_TARGET inline __m256i word_index(__m256i words) {
  return _mm256_ternarylogic_epi32(words, _mm256_set1_epi16(15), load256(kWordIndex.pat), 0xEA);
}
// Pair p's 32 fp16 entries looked up by a byte index (vpermb) or a word index (vpermw), widened.
SG_STEP_TARGET inline __m512 fp16_by_bytes(const Data& d, int p, __m256i idx) {
  const __m512i r = _mm512_permutexvar_epi8(_mm512_castsi256_si512(idx), _mm512_loadu_si512(d.th + 32 * p));
  return _mm512_cvtph_ps(_mm512_castsi512_si256(r));
}
SG_STEP_TARGET inline __m512 fp16_by_words(const Data& d, int p, __m256i idx) {
  const __m512i r = _mm512_permutexvar_epi16(_mm512_castsi256_si512(idx), _mm512_loadu_si512(d.th + 32 * p));
  return _mm512_cvtph_ps(_mm512_castsi512_si256(r));
}

struct Lut4Fp16Vpermb {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return fp16_by_bytes(d, p, byte_index(a, b));
  }
};
struct Lut4Fp16VpermwShift {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return fp16_by_words(d, p, word_index(_mm256_multishift_epi64_epi8(load256(kWordIndex.ctl), both_dwords(a, b))));
  }
};
// vpermw's index by an in-lane byte shuffle and a word shift instead of vpmultishiftqb: word m
// takes byte m / 2 of its row's dword (vpshufb), shifted right by 4 for odd m (vpsrlvw).
struct Lut4Fp16VpermwShuf {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    const __m256i ctl = _mm256_set_epi8(-1, 3, -1, 3, -1, 2, -1, 2, -1, 1, -1, 1, -1, 0, -1, 0,
                                        -1, 3, -1, 3, -1, 2, -1, 2, -1, 1, -1, 1, -1, 0, -1, 0);
    const __m256i sh = _mm256_set_epi16(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
    return fp16_by_words(d, p, word_index(_mm256_srlv_epi16(_mm256_shuffle_epi8(both_dwords(a, b), ctl), sh)));
  }
};
// Costs apart: the multishift index alone (as the weight vector, widened), and the lookup with
// the codes masked as its index (no multishift or ternary logic).
struct Lut4Fp16IndexOnly {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return _mm512_cvtph_ps(byte_index(a, b));
  }
};
struct Lut4Fp16LookupOnly {
  SG_STEP_TARGET static __m512 pair(const Data& d, int p, int64_t s) {
    int32_t a, b;
    codes4(d, p, s, a, b);
    return fp16_by_bytes(d, p, _mm256_and_si256(both_dwords(a, b), _mm256_set1_epi8(0x3F)));
  }
};

// The signed 4-bit codes of a table's 16 entries.
SG_STEP_TARGET inline __m512 codes16() { return _mm512_set_ps(-1, -2, -3, -4, -5, -6, -7, -8, 7, 6, 5, 4, 3, 2, 1, 0); }
// Every lane but the code-0 one, which takes only the sign.
SG_STEP_TARGET inline __m512i exp_keep() {
  return _mm512_set_epi32(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, static_cast<int32_t>(0x80000000u));
}

// Job j's table by the exponent form: its row of the 64 KiB table with the scale's exponent and
// sign added to every entry's bits (the code-0 entry takes only the sign).
SG_STEP_TARGET inline __m512i exp_table(const Data& d, int64_t j) {
  j &= 4095;
  const __m512i base = _mm512_load_si512(d.exp_rows + d.exp_row[j]);
  return _mm512_add_epi32(base, _mm512_and_si512(_mm512_set1_epi32(static_cast<int32_t>(d.exp_add[j])), exp_keep()));
}

// The sum of every lane of every accumulator, so the compiler keeps the steps that made them.
// Each accumulator is an array of 8 (one per token).
template <class... Accs>
SG_STEP_TARGET inline float lanes_total(const Accs&... accs) {
  __m512 sum = _mm512_setzero_ps();
  for (int t = 0; t < 8; ++t) ((sum = _mm512_add_ps(sum, accs[t])), ...);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

// A scale's 16 table values rounded to fp16 (as ShiftScale4::tables_for makes them), in fp16.
SG_STEP_TARGET inline __m256i table_fp16(float scale) {
  return _mm512_cvtps_ph(_mm512_mul_ps(_mm512_set1_ps(scale), codes16()), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// How a step makes one table (into a 64-entry ring), besides its weight vectors.
enum class Tables { kNone, kRound, kExp };

template <Tables How>
SG_STEP_TARGET inline void make_table(Data& d, int64_t s) {
  float* dst = d.ring + (s & 63) * 16;
  if constexpr (How == Tables::kRound) {
    _mm512_store_ps(dst, _mm512_cvtph_ps(table_fp16(d.scale[s & 4095])));
  } else if constexpr (How == Tables::kExp) {
    _mm512_store_si512(dst, exp_table(d, s));
  }
}

// Token t's 8 activations at xb, broadcast to both halves (a pair's two rows).
SG_STEP_TARGET inline __m512 x8(const float* xb, int t) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(xb + t * 8))));
}
// Steps of the kernel's shape: the next step's three weight vectors made during this one's
// 24 FMAs. Activations broadcast from 8 floats (Whole: loaded as 16), cycling through XSteps
// steps of them (64: 16 KiB, in L1; 1024: 256 KiB, from L2 as a kernel's K = 8192 reads them).
template <class Kind, bool Whole = false, Tables How = Tables::kNone, int XSteps = 64>
SG_STEP_TARGET __attribute__((noinline)) float run_steps(Data& d, int64_t steps) {
  __m512 a0[8], a1[8], a2[8];
  for (int t = 0; t < 8; ++t) a0[t] = a1[t] = a2[t] = _mm512_setzero_ps();
  __m512 v0 = Kind::pair(d, 0, 0), v1 = Kind::pair(d, 1, 0), v2 = Kind::pair(d, 2, 0);
  for (int64_t s = 0; s < steps; ++s) {
    const __m512 n0 = Kind::pair(d, 0, s + 1), n1 = Kind::pair(d, 1, s + 1), n2 = Kind::pair(d, 2, s + 1);
    make_table<How>(d, s);
    const float* xb = d.x + (s & (Whole ? 31 : XSteps - 1)) * (Whole ? 128 : 64);
#pragma GCC unroll 8
    for (int t = 0; t < 8; ++t) {
      const __m512 xv = Whole ? _mm512_loadu_ps(xb + t * 16) : x8(xb, t);
      a0[t] = _mm512_fmadd_ps(v0, xv, a0[t]);
      a1[t] = _mm512_fmadd_ps(v1, xv, a1[t]);
      a2[t] = _mm512_fmadd_ps(v2, xv, a2[t]);
    }
    v0 = n0;
    v1 = n1;
    v2 = n2;
  }
  return lanes_total(a0, a1, a2);
}

// A 4-row group: 2 row pairs × 8 tokens = 16 accumulators, which leaves registers for the two
// pairs' tables; steps come in blocks of 4 (32 columns), each block's 4 tables made in
// registers first by the exponent form (Exp) or kept from the start (the lookups alone).
// Lookups: false for the FMAs alone.
template <bool Lookups, bool Exp>
SG_STEP_TARGET __attribute__((noinline)) float run_rows4(Data& d, int64_t steps) {
  __m512 a0[8], a1[8];
  for (int t = 0; t < 8; ++t) a0[t] = a1[t] = _mm512_setzero_ps();
  __m512 t0 = _mm512_loadu_ps(d.t), t1 = _mm512_loadu_ps(d.t + 16);
  __m512 t2 = _mm512_loadu_ps(d.t + 32), t3 = _mm512_loadu_ps(d.t + 48);
  auto table = [&](int64_t j) SG_STEP_TARGET { return _mm512_castsi512_ps(exp_table(d, j)); };
  // Pair p's weight vector at step s (the FMAs alone: the table itself).
  auto lookup = [&](int p, int64_t s, __m512 ta, __m512 tb) SG_STEP_TARGET {
    if constexpr (!Lookups) return ta;
    int32_t a, b;
    codes4(d, p, s, a, b);
    return _mm512_permutex2var_ps(ta, lut4_index(a, b), tb);
  };
  if constexpr (Exp) {
    t0 = table(0), t1 = table(1), t2 = table(2), t3 = table(3);
  }
  // One step ahead, as the kernels: the next step's vectors are looked up during this one's
  // FMAs, and the last step of a block makes the next block's tables first.
  __m512 v0 = lookup(0, 0, t0, t1), v1 = lookup(1, 0, t2, t3);
  for (int64_t blk = 0; blk < steps / 4; ++blk) {
#pragma GCC unroll 4
    for (int st = 0; st < 4; ++st) {
      const int64_t s = blk * 4 + st;
      if (Exp && st == 3) {
        t0 = table(4 * blk + 4);
        t1 = table(4 * blk + 5);
        t2 = table(4 * blk + 6);
        t3 = table(4 * blk + 7);
      }
      const __m512 n0 = lookup(0, s + 1, t0, t1), n1 = lookup(1, s + 1, t2, t3);
      const float* xb = d.x + (s & 63) * 64;
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        const __m512 xv = x8(xb, t);
        a0[t] = _mm512_fmadd_ps(v0, xv, a0[t]);
        a1[t] = _mm512_fmadd_ps(v1, xv, a1[t]);
      }
      v0 = n0;
      v1 = n1;
    }
  }
  return lanes_total(a0, a1);
}

// 8-bit codes looked up in 256-entry fp16 tables split into byte planes, with no multiply
// (bench/README.md, "int8 without a multiply"). Per pair and 4 steps (32 columns
// of both rows) the codes are joined so that 16-byte lane j holds row a's columns for even j
// and row b's for odd j; each plane is two vpermi2b of its 128-byte halves blended by the code's
// bit 7; the planes are interleaved into fp16 words (unpacklo: steps 0 and 2, unpackhi: 1 and
// 3) and stored; each step widens its pair's 16 words from that store (one vcvtph2ps). Pair p's
// next block is decoded during step p of this one. The forms:
//   kTensor     one table for every row (int8 per tensor)
//   kRow        each row its own table (int8 per channel): both rows' lookups, blended by row
//   kNoLookup   the same data movement with each plane an XOR of the codes (no lookup)
//   kStepsOnly  no decode at all: the steps widen the same stored words (the loop alone)
enum class Table8 { kTensor, kRow, kNoLookup, kStepsOnly };
// Where step st's 16 words (row a's 8, then row b's) are in a pair's store.
constexpr int kAt[4] = {0, 32, 16, 48};
template <Table8 How>
SG_STEP_TARGET inline void decode_block8(const Data& d, int p, int64_t blk, uint16_t* out) {
  const int64_t c0 = (blk & 63) * 32;
  const int8_t* a = d.c8 + (2 * p) * 2048 + c0;
  const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2048)), 1);
  const __m512i codes = _mm512_shuffle_i64x2(ab, ab, _MM_SHUFFLE(3, 1, 2, 0));
  const __mmask64 upper = _mm512_movepi8_mask(codes);
  // Codes 0-127 from the plane's first 128 bytes, 128-255 from its second.
  auto lookup = [&](const uint8_t* t) SG_STEP_TARGET {
    const __m512i below = _mm512_permutex2var_epi8(_mm512_load_si512(t), codes, _mm512_load_si512(t + 64));
    const __m512i above = _mm512_permutex2var_epi8(_mm512_load_si512(t + 128), codes, _mm512_load_si512(t + 192));
    return _mm512_mask_blend_epi8(upper, below, above);
  };
  auto plane = [&](int half) SG_STEP_TARGET {
    if constexpr (How == Table8::kTensor) {
      return lookup(d.t8[0] + half);
    } else if constexpr (How == Table8::kRow) {
      return _mm512_mask_blend_epi8(0xFFFF0000FFFF0000ull, lookup(d.t8[2 * p] + half), lookup(d.t8[2 * p + 1] + half));
    } else {
      return _mm512_xor_si512(codes, _mm512_load_si512(d.t8[0] + half));
    }
  };
  const __m512i lo = plane(0), hi = plane(256);
  _mm512_store_si512(out, _mm512_unpacklo_epi8(lo, hi));
  _mm512_store_si512(out + 32, _mm512_unpackhi_epi8(lo, hi));
}
template <Table8 How>
SG_STEP_TARGET __attribute__((noinline)) float run_int8_table(Data& d, int64_t steps) {
  __m512 a0[8], a1[8], a2[8];
  for (int t = 0; t < 8; ++t) a0[t] = a1[t] = a2[t] = _mm512_setzero_ps();
  alignas(64) uint16_t buf[2][3][64];
  // Both buffers start decoded: kStepsOnly never writes them again, and what the steps widen
  // must be small fp16 values, not whatever the stack held.
  for (int b = 0; b < 2; ++b) {
    for (int p = 0; p < 3; ++p) decode_block8<How>(d, p, 0, buf[b][p]);
  }
  for (int64_t blk = 0; blk < steps / 4; ++blk) {
    uint16_t(*cur)[64] = buf[blk & 1];
    uint16_t(*nxt)[64] = buf[(blk + 1) & 1];
#pragma GCC unroll 4
    for (int st = 0; st < 4; ++st) {
      const int64_t s = blk * 4 + st;
      if (How != Table8::kStepsOnly && st < 3) decode_block8<How>(d, st, blk + 1, nxt[st]);
      const __m512 v[3] = {_mm512_cvtph_ps(load256(cur[0] + kAt[st])), _mm512_cvtph_ps(load256(cur[1] + kAt[st])),
                           _mm512_cvtph_ps(load256(cur[2] + kAt[st]))};
      const float* xb = d.x + (s & 63) * 64;
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        const __m512 xv = x8(xb, t);
        a0[t] = _mm512_fmadd_ps(v[0], xv, a0[t]);
        a1[t] = _mm512_fmadd_ps(v[1], xv, a1[t]);
        a2[t] = _mm512_fmadd_ps(v[2], xv, a2[t]);
      }
    }
  }
  return lanes_total(a0, a1, a2);
}
// Whether the lookup forms decode what they claim: block 1 of every pair, each step's words
// against its codes looked up one by one in the byte planes (so a rate is a decode's rate).
template <Table8 How>
SG_STEP_TARGET bool block8_decodes(const Data& d) {
  alignas(64) uint16_t out[64];
  for (int p = 0; p < 3; ++p) {
    decode_block8<How>(d, p, 1, out);
    for (int st = 0; st < 4; ++st) {
      for (int j = 0; j < 16; ++j) {
        const int row = 2 * p + j / 8;
        const auto code = static_cast<uint8_t>(d.c8[row * 2048 + 32 + 8 * st + j % 8]);
        const uint8_t* t = d.t8[How == Table8::kRow ? row : 0];
        if (out[kAt[st] + j] != (t[code] | t[256 + code] << 8)) return false;
      }
    }
  }
  return true;
}
// One chunk's table pass, by itself (no FMAs), as ShiftScale4::prepare runs it before a chunk's
// steps: 16 column blocks × 6 rows, each scale read from the group's widened parameters.
//   kTables     the kernel's: scale × the 16 codes, rounded to fp16 and back, a 64-byte store
//   kStores     the scale broadcast and stored alone (what the stores cost by themselves)
//   kFp16Rows   the 32 columns decoded to fp16 instead (the block's 16 values as fp16 in a
//               register, vpmultishiftqb + AND for the word indices, one vpermw, a 64-byte store)
enum class Pass { kTables, kStores, kFp16Rows };

// Word j of qword l (column 4l + j of 32) from bit 16 (l mod 4) + 4j of its source qword, codes
// 0-15 in qwords 0-3 and 16-31 in 4-7 (high bytes: anything, masked off).
struct RowsConsts {
  alignas(64) uint8_t ctl[64] = {};
  RowsConsts() {
    for (int i = 0; i < 64; i += 2) ctl[i] = static_cast<uint8_t>(16 * ((i / 8) % 4) + 4 * ((i % 8) / 2));
  }
};
const RowsConsts kRowsCtl;

template <Pass How>
SG_STEP_TARGET __attribute__((noinline)) void table_pass(Data& d, int64_t chunk) {
  const float* scales = d.scale + (chunk & 31) * 96;
  for (int q = 0; q < 16; ++q) {
    for (int i = 0; i < 6; ++i) {
      const float scale = scales[i * 16 + q];
      float* table = d.tables + (q * 6 + i) * 16;
      if constexpr (How == Pass::kTables) {
        _mm512_store_ps(table, _mm512_cvtph_ps(table_fp16(scale)));
      } else if constexpr (How == Pass::kStores) {
        _mm512_store_ps(table, _mm512_set1_ps(scale));
      } else {
        const __m256i h = table_fp16(scale);
        int64_t c0, c1;
        std::memcpy(&c0, d.c4 + i * 1024 + q * 16, sizeof c0);
        std::memcpy(&c1, d.c4 + i * 1024 + q * 16 + 8, sizeof c1);
        const __m512i src = _mm512_mask_set1_epi64(_mm512_set1_epi64(c0), 0xF0, c1);
        const __m512i idx = _mm512_and_si512(_mm512_multishift_epi64_epi8(_mm512_load_si512(kRowsCtl.ctl), src),
                                             _mm512_set1_epi16(15));
        _mm512_store_si512(d.rows16 + i * 512 + q * 32, _mm512_permutexvar_epi16(idx, _mm512_castsi256_si512(h)));
      }
    }
  }
}

Data* shared_data() {
  static Data* d = [] {
    auto* p = new Data;
    for (int i = 0; i < 1024 * 64; ++i) p->x[i] = 1e-3f * static_cast<float>(i % 7);
    for (int i = 0; i < 6 * 2048; ++i) p->w16[i] = static_cast<uint16_t>(0x1400 + i % 512);
    for (int i = 0; i < 6 * 1024 + 64; ++i) p->c4[i] = static_cast<uint8_t>(i * 37);
    for (int i = 0; i < 6 * 2048; ++i) p->c8[i] = static_cast<int8_t>(i * 37);
    for (int i = 0; i < 96; ++i) {
      p->t[i] = 1e-3f * static_cast<float>(i % 16);
      p->th[i] = static_cast<uint16_t>(0x1000 + i % 16);
    }
    // Small fp16 values (bits 0x1400 + 3c + r) in the byte planes.
    for (int r = 0; r < 6; ++r) {
      for (int c = 0; c < 256; ++c) {
        const int bits = 0x1400 + 3 * c + r;
        p->t8[r][c] = static_cast<uint8_t>(bits & 0xFF);
        p->t8[r][256 + c] = static_cast<uint8_t>(bits >> 8);
      }
    }
    for (int m = 0; m < 1024; ++m) {
      for (int j = 0; j < 16; ++j) p->exp_rows[m * 16 + j] = 1e-3f * static_cast<float>((m + j) % 13);
    }
    // Jobs spread over the 64 KiB table as a row group's scales would be.
    for (uint32_t j = 0; j < 4096; ++j) {
      p->exp_row[j] = ((j * 2654435761u) >> 22) * 16;
      p->exp_add[j] = (j % 7) << 23;
      p->scale[j] = 1e-3f * static_cast<float>(j % 11 + 1);
    }
    return p;
  }();
  return d;
}

// The kernels' avx512 level (AVX-512F/VL, FMA, F16C, as the runtime detects it) and the two
// extensions only the fp16-table form uses.
bool supported() {
  return sg::cpu_level_detected() >= sg::CpuLevel::kAvx512 && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vbmi");
}

// The process CPU seconds of every iteration of body(d), or none with the state skipped where
// the CPU lacks the forms' extensions.
template <class Body>
std::optional<double> iterations_cpu(benchmark::State& state, Body body) {
  if (!supported()) {
    state.SkipWithError("needs AVX-512F/VL/BW/VBMI and F16C");
    return std::nullopt;
  }
  Data& d = *shared_data();
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = cpu_seconds();
    body(d);
    cpu += cpu_seconds() - c0;
  }
  return cpu;
}

// steps_per_run(d, steps) runs `steps` steps of one form.
template <class Run>
void run_form(benchmark::State& state, int64_t flop_per_step, Run steps_per_run) {
  constexpr int64_t kSteps = int64_t{1} << 20;
  const auto cpu = iterations_cpu(state, [&](Data& d) { benchmark::DoNotOptimize(steps_per_run(d, kSteps)); });
  if (!cpu) return;
  state.counters["flop_per_s"] =
      static_cast<double>(flop_per_step) * static_cast<double>(kSteps) * static_cast<double>(state.iterations()) / *cpu;
}

// A table pass alone, reported as CPU nanoseconds per table (per row and 32 columns).
template <Pass How>
void BM_pass(benchmark::State& state) {
  constexpr int64_t kChunks = int64_t{1} << 14;
  const auto cpu = iterations_cpu(state, [](Data& d) {
    for (int64_t c = 0; c < kChunks; ++c) table_pass<How>(d, c);
    benchmark::ClobberMemory();
  });
  if (!cpu) return;
  state.counters["ns_per_table"] = *cpu * 1e9 / (static_cast<double>(kChunks) * 96 * static_cast<double>(state.iterations()));
}

// The kernel's 6-row step: 24 FMAs of 16 lanes, 2 FLOP each.
template <class Kind, bool Whole = false, Tables How = Tables::kNone, int XSteps = 64>
void BM_step(benchmark::State& state) {
  run_form(state, 24 * 32, [](Data& d, int64_t steps) { return run_steps<Kind, Whole, How, XSteps>(d, steps); });
}
// 4 steps at a time, 8-bit codes by byte tables: the same 24 FMAs per step.
template <Table8 How>
void BM_int8_table(benchmark::State& state) {
  if constexpr (How == Table8::kTensor || How == Table8::kRow) {
    if (supported() && !block8_decodes<How>(*shared_data())) {
      state.SkipWithError("the form's words differ from its codes looked up one by one");
      return;
    }
  }
  run_form(state, 24 * 32, [](Data& d, int64_t steps) { return run_int8_table<How>(d, steps); });
}
// The 4-row step: 16 FMAs.
template <bool Lookups, bool Exp>
void BM_rows4(benchmark::State& state) {
  run_form(state, 16 * 32, [](Data& d, int64_t steps) { return run_rows4<Lookups, Exp>(d, steps); });
}

BENCHMARK(BM_step<Fmas>)->Name("fmas");
BENCHMARK_TEMPLATE2(BM_step, Fmas, true)->Name("fmas_loads");
BENCHMARK_TEMPLATE(BM_step, Fmas, false, Tables::kNone, 1024)->Name("fmas_x_l2");
BENCHMARK(BM_step<Fp16Insert128>)->Name("fp16_insert128");
BENCHMARK(BM_step<Fp16Halves>)->Name("fp16_halves");
BENCHMARK_TEMPLATE(BM_step, Fp16Halves, false, Tables::kNone, 1024)->Name("fp16_halves_x_l2");
BENCHMARK(BM_step<Int8Convert>)->Name("int8_convert");
BENCHMARK(BM_step<Int8Mul1>)->Name("int8_mul1");
BENCHMARK(BM_step<Int8IMul1>)->Name("int8_imul1");
BENCHMARK(BM_step<Int8RoundTrip>)->Name("int8_round_trip");
BENCHMARK(BM_step<Int8Split>)->Name("int8_split");
BENCHMARK(BM_step<Int8IntegerSplit>)->Name("int8_integer_split");
BENCHMARK(BM_step<Int8IntRound<false>>)->Name("int8_int_round");
BENCHMARK(BM_step<Int8IntRound<true>>)->Name("int8_int_round_mask");
BENCHMARK(BM_int8_table<Table8::kTensor>)->Name("int8_table");
BENCHMARK(BM_int8_table<Table8::kRow>)->Name("int8_table_per_row");
BENCHMARK(BM_int8_table<Table8::kNoLookup>)->Name("int8_table_no_lookup");
BENCHMARK(BM_int8_table<Table8::kStepsOnly>)->Name("int8_table_steps_only");
BENCHMARK(BM_step<Lut4Kernel>)->Name("lut4_kernel");
BENCHMARK(BM_step<Lut4Index>)->Name("lut4_index");
BENCHMARK(BM_step<Lut4JoinedCodes>)->Name("lut4_joined_codes");
BENCHMARK(BM_step<Lut4PerHalf>)->Name("lut4_per_half");
BENCHMARK(BM_step<Lut4TwoVpermps>)->Name("lut4_two_vpermps");
BENCHMARK(BM_step<Lut4Fp16Vpermw>)->Name("lut4_fp16_vpermw");
BENCHMARK(BM_step<Lut4Fp16Vpermb>)->Name("lut4_fp16_vpermb");
BENCHMARK(BM_step<Lut4Fp16VpermwShift>)->Name("lut4_fp16_vpermw_shift");
BENCHMARK(BM_step<Lut4Fp16VpermwShuf>)->Name("lut4_fp16_vpermw_shuf");
BENCHMARK(BM_step<Lut4Fp16IndexOnly>)->Name("lut4_fp16_index_only");
BENCHMARK(BM_step<Lut4Fp16LookupOnly>)->Name("lut4_fp16_lookup_only");
BENCHMARK_TEMPLATE(BM_step, Lut4Kernel, false, Tables::kRound)->Name("lut4_table_round");
BENCHMARK_TEMPLATE(BM_step, Lut4Kernel, false, Tables::kExp)->Name("lut4_table_exp");
BENCHMARK(BM_rows4<false, false>)->Name("rows4_fmas");
BENCHMARK(BM_rows4<true, false>)->Name("rows4_lut4");
BENCHMARK(BM_rows4<true, true>)->Name("rows4_lut4_exp");
BENCHMARK(BM_pass<Pass::kTables>)->Name("table_pass");
BENCHMARK(BM_pass<Pass::kStores>)->Name("table_pass_stores");
BENCHMARK(BM_pass<Pass::kFp16Rows>)->Name("table_pass_fp16_rows");

}  // namespace
#endif

BENCHMARK_MAIN();
