// The many-token panel GEMM (ops/gemm_panel.h) gives the bits of the skinny kernel and of the
// plain reference (8 lane partials over k ≡ lane mod 8, fused multiply-add, the fixed tree),
// for token counts on both sides of its switch point and of its token chunk, K with a partial
// last 8-chunk and spanning several K blocks, N past one row block and not a multiple of a
// row pair, fp16 and fp32 weights viewed or streamed, on 1 and 2 threads.
#include "core/parallel.h"
#include "ops/gemm_panel.h"
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

struct PanelCase {
  int64_t M, N, K;
  bool f16, streamed;
};

TEST(GemmPanel, EqualsTheSkinnyKernelAndTheReferenceBitForBitOnAnyThreadCount) {
  if (cpu_level_detected() < CpuLevel::kAvx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::vector<PanelCase> cases;
  for (int64_t M : {1, 7, 8, 9, 16, 17, 64, 513}) {
    // K: below one chunk, a partial last chunk (not a multiple of 8 or 16), a multiple of 8 but
    // not 16, and past one K block (512) with and without a partial chunk.
    for (int64_t K : {5, 67, 136, 1037, 1024}) {
      // N: one row and 13 (activations read in place, Plan::direct, up to 16 rows), past one
      // 64-row block (activations packed).
      for (int64_t N : {1, 13, 70}) cases.push_back({M, N, K, (M + K + N) % 2 == 0, (M * K) % 3 == 0});
    }
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const CpuLevel before = cpu_level();
  for (const PanelCase& c : cases) {
    const int64_t ldx = c.K + 5, ldy = c.N + 3;
    std::vector<float> x(static_cast<size_t>(c.M * ldx));
    for (float& v : x) v = dist(rng);
    const testing::GemmTestWeight weight(c.N, c.K, c.f16, c.streamed, rng, dist);
    const std::vector<float>& w32 = weight.w32;
    const WeightRows& rows = weight.rows;
    std::vector<float> bias(static_cast<size_t>(c.N));
    for (float& v : bias) v = dist(rng);
    const std::string what = "M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" +
                             std::to_string(c.K) + (c.f16 ? " f16" : " f32") + (c.streamed ? " streamed" : "");
    // The skinny kernel: the avx2 level never takes the panel path and is bit-identical to
    // the avx512 skinny variant (KernelVariants tests).
    std::vector<float> skinny(static_cast<size_t>(c.M * ldy), -7.0f);
    gemm_x_wt_at(CpuLevel::kAvx2, x.data(), c.M, ldx, rows, bias.data(), skinny.data(), ldy);
    for (int threads : {1, 2}) {
      ParallelScope scope(threads);
      std::vector<float> y(static_cast<size_t>(c.M * ldy), -7.0f);
      gemm_x_wt_at(CpuLevel::kAvx512, x.data(), c.M, ldx, rows, bias.data(), y.data(), ldy);
      for (int64_t m = 0; m < c.M; ++m) {
        for (int64_t n = 0; n < ldy; ++n) {
          const size_t i = static_cast<size_t>(m * ldy + n);
          if (n >= c.N) {
            ASSERT_EQ(y[i], -7.0f) << what << " wrote past N at m=" << m << " n=" << n;
            continue;
          }
          const float want = testing::reference_dot(x.data() + m * ldx, w32.data() + n * c.K, c.K) + bias[static_cast<size_t>(n)];
          ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want))
              << what << " threads=" << threads << " m=" << m << " n=" << n << ": " << y[i] << " vs " << want;
          ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(skinny[i])) << what;
        }
      }
    }
  }
  set_cpu_level(before);
}

// gemm_x_wt_f16io (x and y as fp16 bits, what linear does in the executor's fp16 modes) gives
// the bits of widening x, gemm_x_wt and rounding y to fp16: through the panel GEMM (which
// widens x as it packs it and rounds y as it stores it) from 16 tokens at the avx512 level,
// through those three steps below; the direct path (16 rows or fewer) included, partial row
// groups, with and without bias, viewed and streamed weights, 1 and 2 threads.
TEST(GemmPanel, Fp16InAndOutEqualsWideningMultiplyingAndRoundingBitForBit) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const CpuLevel before = cpu_level();
  for (CpuLevel level : {CpuLevel::kAvx512, CpuLevel::kAvx2, CpuLevel::kScalar}) {
    if (level > cpu_level_detected()) continue;
    set_cpu_level(level);
    for (int64_t M : {1, 15, 16, 17, 200}) {
      for (int64_t K : {5, 67, 1037}) {
        for (int64_t N : {1, 13, 70}) {
          const bool f16 = (M + K + N) % 2 == 0, streamed = (M * K) % 3 == 0, with_bias = N != 13;
          const int64_t ldx = K + 3, ldy = N + 2;
          std::vector<uint16_t> x(static_cast<size_t>(M * ldx));
          for (uint16_t& v : x) v = f32_to_f16(dist(rng));
          const testing::GemmTestWeight weight(N, K, f16, streamed, rng, dist);
          std::vector<float> bias(static_cast<size_t>(N));
          for (float& v : bias) v = dist(rng);
          const float* b = with_bias ? bias.data() : nullptr;
          // The three steps, by the fp32 entry point.
          std::vector<float> x32(static_cast<size_t>(M * K)), y32(static_cast<size_t>(M * N));
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t k = 0; k < K; ++k) x32[static_cast<size_t>(m * K + k)] = f16_to_f32(x[static_cast<size_t>(m * ldx + k)]);
          }
          gemm_x_wt(x32.data(), M, K, weight.rows, b, y32.data(), N);
          const std::string what = std::string(cpu_level_name(level)) + " M=" + std::to_string(M) + " N=" +
                                   std::to_string(N) + " K=" + std::to_string(K) + (f16 ? " f16" : " f32") +
                                   (streamed ? " streamed" : "") + (with_bias ? " bias" : "");
          for (int threads : {1, 2}) {
            ParallelScope scope(threads);
            std::vector<uint16_t> y(static_cast<size_t>(M * ldy), 0x7777);
            gemm_x_wt_f16io(x.data(), M, ldx, weight.rows, b, y.data(), ldy);
            for (int64_t m = 0; m < M; ++m) {
              for (int64_t n = 0; n < ldy; ++n) {
                const uint16_t got = y[static_cast<size_t>(m * ldy + n)];
                if (n >= N) {
                  ASSERT_EQ(got, 0x7777) << what << " wrote past N at m=" << m << " n=" << n;
                  continue;
                }
                ASSERT_EQ(got, f32_to_f16(y32[static_cast<size_t>(m * N + n)]))
                    << what << " threads=" << threads << " m=" << m << " n=" << n;
              }
            }
          }
        }
      }
    }
  }
  set_cpu_level(before);
}

TEST(GemmPanel, ManyTokensSplitOverThreads) {
  if (cpu_level_detected() < CpuLevel::kAvx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  const int64_t M = 64, N = 256, K = 256;
  std::vector<float> x(static_cast<size_t>(M * K), 0.5f), w(static_cast<size_t>(N * K), 0.25f);
  std::vector<float> y(static_cast<size_t>(M * N));
  WeightRows rows;
  rows.dtype = DType::kF32;
  rows.data = w.data();
  rows.n = N;
  rows.k = K;
  rows.ld = K;
  ParallelScope scope(2);
  const int64_t before = parallel_split_calls();
  gemm_panel::gemm(x.data(), M, K, rows, nullptr, y.data(), N);
  EXPECT_EQ(parallel_split_calls(), before + 1);
  for (float v : y) ASSERT_EQ(v, 0.125f * K);
}

}  // namespace
}  // namespace sg
