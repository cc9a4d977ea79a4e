// The 8-token product with compressed weights decoded in registers (RegisterDecode,
// ops/register_decoders.h) gives the bits of decoding the same weight into a tile first and of
// the plain reference (8 lane partials over k ≡ lane mod 8, fused multiply-add, the fixed tree
// over the decoded fp16 values), for every form the range decoders offer it for: int8, uint8,
// int4 and uint4 codes with a scale per tensor, per row, per block of rows and per block of
// columns, with fp16, fp32 and integer offsets, and 4-bit palettes per tensor, per group of
// rows and per block of columns; for 1 to 15 tokens, rows not a multiple of the 6-row group, a
// weight read from a row offset (an expert of a bank), on 1 and 2 threads. The forms it must
// not take (column blocks below 8 or not a power of two, rows not a multiple of 8, blockings
// whose parameter is not a function of row / row_block) are checked to fall back.
#include "core/parallel.h"
#include "ops/constexpr_stream.h"
#include "ops/gemm_test_weight.h"
#include "ops/linear_kernel.h"
#include "ops/register_decoders.h"
#include "ops/split_rounding.h"
#include "shardgate/cpu.h"
#include "shardgate/half.h"
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sg::testing {
namespace {

Tensor codes(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::zeros(dtype, shape).value();
  std::uniform_int_distribution<int> byte(0, 255);
  auto* bytes = reinterpret_cast<uint8_t*>(t.mutable_raw());
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
  return t;
}

// fp16 values spread over several binades, so products round in fp16 and a missed rounding
// shows.
Tensor scales(const Shape& shape, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (float& s : v) s = d(rng);
  return f16s(shape, v);
}

struct Form {
  std::string what;
  std::string op;
  std::vector<HarnessInput> inputs;
  bool registers;  // whether the range decoder must offer the register form
};

std::vector<Form> forms(std::mt19937& rng) {
  std::vector<Form> f;
  const int64_t N = 40, K = 96;  // 6 whole groups and 4 rows; 12 chunks of 8
  auto in = [](std::string n, Tensor t) { return HarnessInput::tensor(std::move(n), std::move(t)); };
  for (DType dt : {DType::kI8, DType::kU8, DType::kI4, DType::kU4}) {
    const std::string d(dtype_name(dt));
    const std::string ss = "constexpr_blockwise_shift_scale";
    f.push_back({d + " per tensor", ss, {in("data", codes(dt, {N, K}, rng)), in("scale", scales({1, 1}, rng, 1e-3f, 3e-2f))}, true});
    f.push_back({d + " per row", ss, {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f))}, true});
    f.push_back({d + " per 4 rows", ss, {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N / 4, 1}, rng, 1e-3f, 3e-2f))}, true});
    f.push_back({d + " per row and 32 columns", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, K / 32}, rng, 1e-3f, 3e-2f))}, true});
    f.push_back({d + " per row and 8 columns, fp16 offset", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, K / 8}, rng, 1e-3f, 3e-2f)),
                  in("offset", scales({N, K / 8}, rng, -9.0f, 9.0f))}, true});
    f.push_back({d + " per row, fp32 offset", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f)),
                  in("offset", to_f32(scales({N, 1}, rng, -9.3f, 9.7f)).value())}, true});
    f.push_back({d + " per row, offset of the codes' dtype", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f)),
                  in("offset", codes(dt, {N, 1}, rng))}, true});
    // An expert bank [E, rows, K] with a scale per expert row: rows of the [E · rows, K] view.
    f.push_back({d + " bank per row", ss,
                 {in("data", codes(dt, {2, N / 2, K}, rng)), in("scale", scales({2, N / 2, 1}, rng, 1e-3f, 3e-2f))}, true});
    f.push_back({d + " bank per expert", ss,
                 {in("data", codes(dt, {2, N / 2, K}, rng)), in("scale", scales({2, 1, 1}, rng, 1e-3f, 3e-2f))}, true});
    // Scales whose products with the codes are fp16 subnormals, and scales of 600-900, whose
    // products with 8-bit codes overflow fp16 (with 4-bit codes they stay below 13 500):
    // outside what the 8-bit split rounding (ShiftScale8Split) is exact for, so the 8-bit
    // decoders must fall back to the fp16 round trip.
    f.push_back({d + " per row, products fp16 subnormals", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-7f, 4e-5f))}, true});
    f.push_back({d + " per tensor, scales of 600-900", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({1, 1}, rng, 600.0f, 900.0f))}, true});
    // Rows longer than the 4-bit decoders' 512-column table chunk (ShiftScale4::prepare): a
    // partial last chunk (1152 = 2 × 512 + 128) with 32- and 128-column blocks, and blocks
    // longer than a chunk (1024 columns).
    f.push_back({d + " per row and 32 columns, rows of 1152", ss,
                 {in("data", codes(dt, {N, 1152}, rng)), in("scale", scales({N, 1152 / 32}, rng, 1e-3f, 3e-2f))}, true});
    f.push_back({d + " per row and 128 columns, rows of 1152, fp16 offset", ss,
                 {in("data", codes(dt, {N, 1152}, rng)), in("scale", scales({N, 1152 / 128}, rng, 1e-3f, 3e-2f)),
                  in("offset", scales({N, 1152 / 128}, rng, -9.0f, 9.0f))}, true});
    f.push_back({d + " per row and 1024 columns, rows of 2048", ss,
                 {in("data", codes(dt, {N, 2048}, rng)), in("scale", scales({N, 2}, rng, 1e-3f, 3e-2f))}, true});
    // Not offered: 4-column blocks (8 decoded elements would need two scales), a row length
    // not a multiple of 8, a scale per expert column but shared across an expert's rows.
    f.push_back({d + " per 4 columns", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, K / 4}, rng, 1e-3f, 3e-2f))}, false});
    f.push_back({d + " per 24 columns (not a power of two)", ss,
                 {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, K / 24}, rng, 1e-3f, 3e-2f))}, false});
    f.push_back({d + " rows of 36", ss, {in("data", codes(dt, {N, 36}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f))}, false});
    f.push_back({d + " bank shared across rows", ss,
                 {in("data", codes(dt, {2, N / 2, K}, rng)), in("scale", scales({1, N / 2, 1}, rng, 1e-3f, 3e-2f))}, false});
  }
  const std::string lut = "constexpr_lut_to_dense";
  auto table = [&](const Shape& s) { return scales(s, rng, -2.0f, 2.0f); };
  f.push_back({"lut4 per tensor", lut, {in("indices", codes(DType::kU4, {N, K}, rng)), in("lut", table({1, 1, 16, 1}))}, true});
  f.push_back({"lut4 per 4 rows", lut, {in("indices", codes(DType::kU4, {N, K}, rng)), in("lut", table({N / 4, 1, 16, 1}))}, true});
  f.push_back({"lut4 per row", lut, {in("indices", codes(DType::kU4, {N, K}, rng)), in("lut", table({N, 1, 16, 1}))}, true});
  f.push_back({"lut4 per 5 rows and 16 columns", lut,
               {in("indices", codes(DType::kU4, {N, K}, rng)), in("lut", table({N / 5, K / 16, 16, 1}))}, true});
  f.push_back({"lut4 bank", lut, {in("indices", codes(DType::kU4, {2, N / 2, K}, rng)), in("lut", table({2, 4, 1, 16, 1}))}, true});
  f.push_back({"lut2 (not 4-bit)", lut, {in("indices", codes(DType::kU2, {N, K}, rng)), in("lut", table({N, 1, 4, 1}))}, false});
  f.push_back({"lut4 per 4 columns", lut,
               {in("indices", codes(DType::kU4, {N, K}, rng)), in("lut", table({1, K / 4, 16, 1}))}, false});
  return f;
}

TEST(RegisterDecode, EqualsDecodingIntoATileAndTheReferenceBitForBit) {
  if (cpu_level_detected() < CpuLevel::kAvx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  // Every level with a register path this CPU runs: avx512, and avx512fp16 (8-bit codes decoded
  // in fp16 arithmetic) where present.
  std::vector<CpuLevel> levels = {CpuLevel::kAvx512};
  if (cpu_level_detected() >= CpuLevel::kAvx512Fp16) levels.push_back(CpuLevel::kAvx512Fp16);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int offered = 0;
  for (const Form& form : forms(rng)) {
    std::optional<StreamedWeight> made;
    const Status st = with_op_context(form.op, form.inputs, [&made](OpContext& ctx) {
      SG_ASSIGN_OR_RETURN(made, stream_constexpr(ctx));
      return Status::ok();
    });
    ASSERT_TRUE(st.is_ok()) << form.what << ": " << st.to_string();
    ASSERT_TRUE(made.has_value()) << form.what << ": no range decoder";
    const StreamedWeight& with = *made;
    ASSERT_EQ(with.registers != nullptr, form.registers) << form.what;
    if (!form.registers) continue;
    ++offered;
    StreamedWeight tile = with;
    tile.registers = nullptr;
    const int64_t K = with.shape.back();
    const int64_t rows = numel(with.shape) / K;
    std::vector<uint16_t> dense16(static_cast<size_t>(rows * K));
    with.decode(0, rows * K, dense16.data());
    std::vector<float> dense(dense16.size());
    for (size_t i = 0; i < dense.size(); ++i) dense[i] = f16_to_f32(dense16[i]);
    // The whole weight, then rows [row0, row0 + n) of it as an expert of a bank would be read.
    for (auto [row0, n] : {std::pair<int64_t, int64_t>{0, rows}, {7, 23}}) {
      for (int64_t M : {1, 2, 3, 5, 8, 9, 15}) {
        const int64_t ldx = K + 3, ldy = n + 2;
        std::vector<float> x(static_cast<size_t>(M * ldx));
        for (float& v : x) v = dist(rng);
        std::vector<float> bias(static_cast<size_t>(n));
        for (float& v : bias) v = dist(rng);
        WeightRows w;
        w.dtype = DType::kF16;
        w.n = n;
        w.k = K;
        w.ld = K;
        w.row0 = row0;
        const std::string what = form.what + " row0=" + std::to_string(row0) + " n=" + std::to_string(n) +
                                 " M=" + std::to_string(M);
        std::vector<float> want(static_cast<size_t>(M * ldy), -7.0f);
        w.stream = &tile;
        gemm_x_wt_at(CpuLevel::kAvx512, x.data(), M, ldx, w, bias.data(), want.data(), ldy);
        for (auto [level, threads] : {std::pair{levels.front(), 1}, {levels.back(), 1}, {levels.back(), 2}}) {
          ParallelScope scope(threads);
          std::vector<float> got(static_cast<size_t>(M * ldy), -7.0f);
          w.stream = &with;
          gemm_x_wt_at(level, x.data(), M, ldx, w, bias.data(), got.data(), ldy);
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t j = 0; j < n; ++j) {
              const size_t at = static_cast<size_t>(m * ldy + j);
              const float ref = reference_dot(&x[static_cast<size_t>(m * ldx)],
                                              &dense[static_cast<size_t>((row0 + j) * K)], K) + bias[static_cast<size_t>(j)];
              ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(want[at]))
                  << what << " " << cpu_level_name(level) << " threads=" << threads << " at token " << m << " row " << j << ": registers "
                  << got[at] << ", tile " << want[at];
              ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(ref))
                  << what << " at token " << m << " row " << j << ": " << got[at] << " vs reference " << ref;
            }
            for (int64_t j = n; j < ldy; ++j) {
              ASSERT_EQ(got[static_cast<size_t>(m * ldy + j)], -7.0f) << what << ": wrote past the row";
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(offered, 4 * 14 + 5);
}

// Whether the 8-bit products are rounded by the split is decided when the stream is made
// (RegisterDecode::split_rounding), from the weight's form and scales: only 8-bit codes with
// one fp16 scale per row and no offset, and only where every scale keeps its products normal
// fp16 numbers. The kernels only read the flag, so a wrong flag is a wrong rounding.
TEST(RegisterDecode, SplitRoundingIsDecidedWhenTheStreamIsMade) {
  std::mt19937 rng(9);
  const int64_t N = 40, K = 96;
  auto in = [](std::string n, Tensor t) { return HarnessInput::tensor(std::move(n), std::move(t)); };
  struct Case {
    std::string what;
    std::vector<HarnessInput> inputs;
    bool split;
  };
  std::vector<Case> cases;
  for (DType dt : {DType::kI8, DType::kU8}) {
    const std::string d(dtype_name(dt));
    cases.push_back({d + " per row", {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f))}, true});
    cases.push_back({d + " per tensor", {in("data", codes(dt, {N, K}, rng)), in("scale", scales({1, 1}, rng, 1e-3f, 3e-2f))}, true});
    cases.push_back({d + " bank per row",
                     {in("data", codes(dt, {2, N / 2, K}, rng)), in("scale", scales({2, N / 2, 1}, rng, 1e-3f, 3e-2f))}, true});
    cases.push_back({d + " per row and 32 columns",
                     {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, K / 32}, rng, 1e-3f, 3e-2f))}, false});
    cases.push_back({d + " per row, fp16 offset",
                     {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f)),
                      in("offset", scales({N, 1}, rng, -9.0f, 9.0f))}, false});
    cases.push_back({d + " per row, products fp16 subnormals",
                     {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-7f, 4e-5f))}, false});
    cases.push_back({d + " per tensor, products overflow fp16",
                     {in("data", codes(dt, {N, K}, rng)), in("scale", scales({1, 1}, rng, 600.0f, 900.0f))}, false});
  }
  for (DType dt : {DType::kI4, DType::kU4}) {
    cases.push_back({std::string(dtype_name(dt)) + " per row (4-bit codes use tables)",
                     {in("data", codes(dt, {N, K}, rng)), in("scale", scales({N, 1}, rng, 1e-3f, 3e-2f))}, false});
  }
  for (const Case& c : cases) {
    std::optional<StreamedWeight> made;
    const Status st = with_op_context("constexpr_blockwise_shift_scale", c.inputs, [&made](OpContext& ctx) {
      SG_ASSIGN_OR_RETURN(made, stream_constexpr(ctx));
      return Status::ok();
    });
    ASSERT_TRUE(st.is_ok()) << c.what << ": " << st.to_string();
    ASSERT_TRUE(made.has_value() && made->registers != nullptr) << c.what << ": no register form";
    EXPECT_EQ(made->registers->split_rounding, c.split) << c.what;
  }
}

#if defined(__x86_64__) || defined(__i386__)
// One decoded row pair into memory (the decoder's instructions need its target).
template <class Dec>
SG_REGDEC_TARGET void store_pair(const Dec& dec, int p, int64_t k, float* out) {
  _mm512_storeu_ps(out, dec.pair(p, k));
}

// ShiftScale8Split's rounding, through the decoder itself: for every fp16 scale the guard
// admits (split_exact) and every 8-bit code, signed and unsigned, the decoded value is the
// fp16 rounding of scale · code (nearest, ties to even) that the range decoder writes: 23.6 M
// products, all of them, each from the vector code the kernel runs (Veltkamp's split,
// c - (c - v) with c = fl((s · 8193) · code); 4097 in its place fails here).
template <bool Signed>
void check_split_on_every_scale() {
  constexpr int64_t kCols = 256;
  const float max_code = Signed ? 128.0f : 255.0f;
  std::vector<uint8_t> code_rows(static_cast<size_t>(regdec::kRows * kCols));
  for (int r = 0; r < regdec::kRows; ++r) {
    for (int64_t k = 0; k < kCols; ++k) code_rows[static_cast<size_t>(r * kCols + k)] = static_cast<uint8_t>(k + 37 * r);
  }
  std::vector<float> admitted;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float s = f16_to_f32(static_cast<uint16_t>(bits));
    if (std::isfinite(s) && regdec::split_exact(ParamView(f16s({1, 1}, {s})), max_code)) admitted.push_back(s);
  }
  ASSERT_GT(admitted.size(), 40'000u);
  int64_t checked = 0;
  for (size_t first = 0; first < admitted.size(); first += regdec::kRows) {
    std::vector<float> six(regdec::kRows, admitted[first]);
    for (int r = 0; r < regdec::kRows && first + r < admitted.size(); ++r) six[r] = admitted[first + r];
    RegisterDecode d;
    d.codes_dtype = Signed ? DType::kI8 : DType::kU8;
    d.codes = reinterpret_cast<const std::byte*>(code_rows.data());
    d.rows = regdec::kRows;
    d.cols = kCols;
    d.col_block = kCols;
    d.scale = ParamView(f16s({regdec::kRows, 1}, six));
    const regdec::ShiftScale8Split<Signed> dec(d, 0);
    for (int64_t k = 0; k < kCols; k += 8) {
      for (int p = 0; p < regdec::kPairs; ++p) {
        float got[16];
        store_pair(dec, p, k, got);
        for (int lane = 0; lane < 16; ++lane) {
          const int r = 2 * p + lane / 8;
          const uint8_t byte = code_rows[static_cast<size_t>(r * kCols + k + lane % 8)];
          const float code = Signed ? static_cast<float>(static_cast<int8_t>(byte)) : static_cast<float>(byte);
          const float want = f16_to_f32(f32_to_f16(six[r] * code));
          ASSERT_EQ(std::bit_cast<uint32_t>(got[lane]), std::bit_cast<uint32_t>(want))
              << "scale " << six[r] << " code " << code << ": " << got[lane] << " vs " << want;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, static_cast<int64_t>(admitted.size()) * kCols);
}

TEST(RegisterDecode, SplitRoundsEveryAdmittedScaleTimesEveryCodeLikeF16) {
  if (cpu_level_detected() < CpuLevel::kAvx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  check_split_on_every_scale<true>();
  check_split_on_every_scale<false>();
}

SG_REGDEC_TARGET void split16(float s, const float* x, float* out) {
  _mm512_storeu_ps(out, regdec::split_round_f16(_mm512_set1_ps(s), _mm512_set1_ps(s * 8193.0f), _mm512_loadu_ps(x)));
}

// The helper's own claim, beyond the scales a decoder admits: every finite fp16 scale times
// every integer code from -128 to 255 whose product is zero or a normal fp16 number.
TEST(RegisterDecode, SplitRoundsLikeF16ForEveryScaleWhereTheProductIsNormal) {
  if (cpu_level_detected() < CpuLevel::kAvx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::vector<float> x(384);
  for (int i = 0; i < 384; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i - 128);
  int64_t checked = 0;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float s = f16_to_f32(static_cast<uint16_t>(bits));
    if (!std::isfinite(s)) continue;
    for (size_t i = 0; i < x.size(); i += 16) {
      float got[16];
      split16(s, &x[i], got);
      for (size_t l = 0; l < 16; ++l) {
        const float v = s * x[i + l];
        if (v != 0.0f && (std::fabs(v) < 0x1p-14f || std::fabs(v) > 65504.0f)) continue;
        ASSERT_EQ(std::bit_cast<uint32_t>(got[l]), std::bit_cast<uint32_t>(f16_to_f32(f32_to_f16(v))))
            << "scale " << s << " code " << x[i + l];
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 15'000'000);
}

// The guard: a scale below 2^-14, or one whose product with the largest code leaves the fp16
// range, keeps a weight off the split.
TEST(RegisterDecode, SplitOnlyWhereEveryProductIsANormalF16) {
  auto view = [](std::vector<float> v) { return ParamView(f16s({static_cast<int64_t>(v.size()), 1}, v)); };
  EXPECT_TRUE(regdec::split_exact(view({1e-3f, -2e-2f, 0x1p-14f}), 128.0f));
  EXPECT_FALSE(regdec::split_exact(view({1e-3f, 3e-5f}), 128.0f));           // subnormal products
  EXPECT_FALSE(regdec::split_exact(view({1e-3f, 0.0f}), 128.0f));            // zero: kept off too
  EXPECT_TRUE(regdec::split_exact(view({256.0f}), 255.0f));                  // 65280
  EXPECT_FALSE(regdec::split_exact(view({512.0f}), 128.0f));                 // 65536
  EXPECT_FALSE(regdec::split_exact(view({-300.0f}), 255.0f));                // -76500
  // split_exact reads the scales as bits: for every fp16 value (NaN and infinity included)
  // and both code ranges it must say what split_admits says of the value.
  for (float max_code : {128.0f, 255.0f}) {
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      const uint16_t h = static_cast<uint16_t>(bits);
      const float s = f16_to_f32(h);
      ASSERT_EQ(regdec::split_exact(ParamView(Tensor::from_f16_bits({1, 1}, std::span<const uint16_t>(&h, 1))), max_code),
                regdec::split_admits(s, max_code))
          << "fp16 bits " << bits << " codes up to " << max_code;
    }
  }
}

// Each 4-bit table is one zmm: off a 64-byte boundary, every table store and lookup load
// touches two cache lines (int4 per block ran 20% slower when the heap happened to place the
// scratch so). Both scratches are aligned whatever size they grow to.
TEST(RegisterDecode, ScratchTablesStartOnACacheLine) {
  for (size_t floats : {16, 100, 1000, 5000, 20000, 70000}) {
    std::vector<char> shuffle_the_heap(floats * 3 + 8);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(regdec::table_scratch(floats)) % 64, 0u) << floats;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(regdec::param_scratch(floats + 8)) % 64, 0u) << floats;
  }
}
#endif

}  // namespace
}  // namespace sg::testing
