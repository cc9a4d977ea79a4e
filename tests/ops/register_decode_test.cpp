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
  EXPECT_EQ(offered, 4 * 12 + 5);
}

#if defined(__x86_64__) || defined(__i386__)
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
