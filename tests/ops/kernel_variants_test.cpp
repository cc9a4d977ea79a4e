// Run-time CPU dispatch (shardgate/cpu.h): every kernel variant this CPU can run against its
// reference, bit for bit. The references are written here in plain C++ with the kernels' lane
// order and reduction tree: the scalar variant rounds each product (a * b, then +), the vector
// variants fuse it (std::fma). So a variant that reorders lanes, drops a tail element, mixes
// up rows or tokens, or fuses where it must not, fails.
#include "ops/linear_kernel.h"
#include "ops/gemm_test_weight.h"
#include "shardgate/cpu.h"
#include "shardgate/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sg {
namespace {

std::vector<CpuLevel> runnable_levels() {
  std::vector<CpuLevel> levels;
  for (CpuLevel l : kCpuLevels) {
    if (static_cast<int>(l) <= static_cast<int>(cpu_level_detected())) levels.push_back(l);
  }
  return levels;
}

struct GemmCase {
  int64_t M, N, K;
  bool f16;
  bool streamed;
};

std::string describe(const GemmCase& c, CpuLevel l) {
  return std::string(cpu_level_name(l)) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
         " K=" + std::to_string(c.K) + (c.f16 ? " f16" : " f32") + (c.streamed ? " streamed" : "");
}

TEST(KernelVariants, GemmEveryVariantEqualsItsReferenceOnEdgeShapes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<GemmCase> cases;
  // Token counts around the 8-token block, K around the 8-lane vector (tails), N around the
  // 6-row group (3 zmm row pairs) of the avx512 variant; f16 and f32 weights, viewed and
  // streamed. M = 17 takes the many-token panel path at avx512 (gemm_panel_test.cpp has more).
  for (int64_t M : {1, 3, 8, 9, 17}) {
    for (int64_t K : {1, 7, 8, 9, 64, 67}) {
      for (int64_t N : {1, 2, 3, 4, 7, 12, 13}) {
        for (bool f16 : {true, false}) {
          for (bool streamed : {false, true}) cases.push_back({M, N, K, f16, streamed});
        }
      }
    }
  }
  const std::vector<CpuLevel> levels = runnable_levels();
  int checked = 0;
  for (const GemmCase& c : cases) {
    const int64_t ldx = c.K + 3;  // a row stride wider than K must be honoured
    std::vector<float> x(static_cast<size_t>(c.M * ldx));
    for (float& v : x) v = dist(rng);
    const testing::GemmTestWeight weight(c.N, c.K, c.f16, c.streamed, rng, dist);
    const std::vector<float>& w32 = weight.w32;
    const WeightRows& rows = weight.rows;
    std::vector<float> bias(static_cast<size_t>(c.N));
    for (float& v : bias) v = dist(rng);
    for (CpuLevel level : levels) {
      const int64_t ldy = c.N + 2;
      std::vector<float> y(static_cast<size_t>(c.M * ldy), -7.0f);
      gemm_x_wt_at(level, x.data(), c.M, ldx, rows, bias.data(), y.data(), ldy);
      const bool fused = level != CpuLevel::kScalar;
      for (int64_t m = 0; m < c.M; ++m) {
        for (int64_t n = 0; n < c.N; ++n) {
          const float want = testing::reference_dot(x.data() + m * ldx, w32.data() + n * c.K, c.K, fused) + bias[static_cast<size_t>(n)];
          const float got = y[static_cast<size_t>(m * ldy + n)];
          ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
              << describe(c, level) << " at m=" << m << " n=" << n << ": " << got << " vs " << want;
        }
        // Columns past N in a wider output row are untouched.
        for (int64_t n = c.N; n < ldy; ++n) ASSERT_EQ(y[static_cast<size_t>(m * ldy + n)], -7.0f);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(cases.size() * levels.size()));
}

TEST(KernelVariants, HalfConversionsAreTheSameBitsAtEveryLevel) {
  const CpuLevel before = cpu_level();
  // Every fp16 value, and floats around every fp16 rounding boundary and beyond its range.
  std::vector<uint16_t> halves(65536);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> floats;
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (float f : {0.0f, -0.0f, 65504.0f, 65520.0f, 65519.99f, 1e-8f, 5.96e-8f, 2.98e-8f, INFINITY, -INFINITY}) {
    floats.push_back(f);
  }
  auto same = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  };
  set_cpu_level(CpuLevel::kScalar);
  std::vector<float> wide_ref(halves.size()), round_ref = floats;
  std::vector<uint16_t> narrow_ref(floats.size());
  f16_to_f32_span(halves.data(), wide_ref.data(), halves.size());
  f32_to_f16_span(floats.data(), narrow_ref.data(), floats.size());
  round_to_f16_span(round_ref.data(), round_ref.size());
  for (CpuLevel level : runnable_levels()) {
    set_cpu_level(level);
    std::vector<float> wide(halves.size()), rounded = floats;
    std::vector<uint16_t> narrow(floats.size());
    f16_to_f32_span(halves.data(), wide.data(), halves.size());
    f32_to_f16_span(floats.data(), narrow.data(), floats.size());
    round_to_f16_span(rounded.data(), rounded.size());
    for (size_t i = 0; i < halves.size(); ++i) ASSERT_TRUE(same(wide[i], wide_ref[i])) << cpu_level_name(level) << " h=" << i;
    for (size_t i = 0; i < floats.size(); ++i) {
      const bool nan = std::isnan(floats[i]);
      if (!nan) {
        ASSERT_EQ(narrow[i], narrow_ref[i]) << cpu_level_name(level) << " f=" << floats[i];
      }
      ASSERT_TRUE(same(rounded[i], round_ref[i])) << cpu_level_name(level) << " f=" << floats[i];
    }
  }
  set_cpu_level(before);
}

TEST(KernelVariants, LevelsClampToTheCpuAndNameTheirVariants) {
  const CpuLevel before = cpu_level();
  EXPECT_EQ(set_cpu_level(CpuLevel::kAvx512Fp16), cpu_level_detected());
  EXPECT_EQ(set_cpu_level(CpuLevel::kScalar), CpuLevel::kScalar);
  const std::vector<std::string> scalar = active_kernel_variants();
  ASSERT_FALSE(scalar.empty());
  for (const std::string& v : scalar) EXPECT_NE(v.find("__scalar"), std::string::npos) << v;
  if (cpu_level_detected() >= CpuLevel::kAvx512) {
    set_cpu_level(CpuLevel::kAvx512);
    EXPECT_EQ(active_kernel_variants().front(), "gemm_x_wt_8x6__avx512f");
    EXPECT_EQ(active_kernel_variants().back(), "gemm_x_wt_8x6_regdecode__avx512f");
  }
  if (cpu_level_detected() >= CpuLevel::kAvx512Fp16) {
    set_cpu_level(CpuLevel::kAvx512Fp16);
    EXPECT_EQ(active_kernel_variants().front(), "gemm_x_wt_8x6__avx512f");  // fp16 weights: same kernel
    EXPECT_EQ(active_kernel_variants().back(), "gemm_x_wt_8x6_regdecode__avx512fp16");
  }
  EXPECT_EQ(parse_cpu_level("avx2"), CpuLevel::kAvx2);
  EXPECT_EQ(parse_cpu_level("avx512fp16"), CpuLevel::kAvx512Fp16);
  EXPECT_FALSE(parse_cpu_level("sse9").has_value());
  set_cpu_level(before);
}

}  // namespace
}  // namespace sg
